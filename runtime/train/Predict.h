//===- Predict.h - The forward program over a data set ----------*- C++ -*-===//
//
// What `tcc predict` and `tcc-run predict` share: the artifact's parameters,
// optionally from a checkpoint of it, the forward program run over every
// sample of the data files in batches of the compiled size, and the outputs
// written as .npy files in the model's declared element types. The last
// batch is padded with copies of the last sample, whose results are
// dropped, so every sample is predicted whatever the batch size.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TRAIN_PREDICT_H
#define TCC_RUNTIME_TRAIN_PREDICT_H

#include "runtime/core/Session.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/TrainLoop.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tcc::rt {

/// Batches of `batch` samples that cover `numSamples`: the last may be
/// partial and is padded.
inline int64_t paddedBatchCount(int64_t numSamples, int64_t batch) {
  return batch > 0 ? (numSamples + batch - 1) / batch : 0;
}

/// Batch `k` of `samples` (`numSamples` samples of `sampleBytes` bytes each,
/// one after the other): samples k*batch onwards, the last sample repeated
/// where they run out. Writes batch * sampleBytes bytes to `out`; returns
/// how many of its rows are real samples.
int64_t gatherPaddedBatch(const uint8_t *samples, size_t sampleBytes,
                          int64_t numSamples, int64_t batch, int64_t k,
                          uint8_t *out);

/// The artifact's forward program; Error saying so when it has none.
const Program &forwardProgram(const Artifact &a);

/// The names of the forward program's outputs, in order: the model's
/// output names as compiled (meta "outputs"), or output0, output1, ... for
/// an artifact that does not list them.
std::vector<std::string> forwardOutputNames(const Artifact &a);

/// One output of the model over all the samples.
struct Prediction {
  std::string name;
  DType dtype = DType::F32;
  HostDType hostDType = HostDType::Native; // the model's declared type
  std::vector<int64_t> shape;              // [samples, per-sample shape...]
  std::vector<uint8_t> bytes;              // in dtype
};

/// The checkpoint the parameters came from.
struct RestoredCheckpoint {
  std::string path;
  int64_t step = 0;
};

/// Checkpoint `from` (a file, or a directory's newest valid one, as --resume
/// takes it; `warn` hears of those skipped). Error naming the path if it is
/// missing, holds no valid checkpoint, or was written for an artifact other
/// than `a`.
Checkpoint
loadCheckpointOf(const Artifact &a, const std::string &from,
                 const std::function<void(const std::string &)> &warn);

/// Loads checkpoint `from` (a file, or a directory's newest valid one, as
/// --resume takes it; `warn` hears of those skipped) and writes into the
/// session the parameters and state the forward program reads (running
/// statistics; optimizer state is not needed). Error, changing nothing, if
/// it was written for another artifact or a tensor does not match.
RestoredCheckpoint
restoreForPrediction(Session &s, const Artifact &a, const std::string &from,
                     const std::function<void(const std::string &)> &warn);

/// Runs the forward program over the samples of `data` (one binding per
/// forward input, .npy or .csv, converted as `tcc train` converts them) and
/// returns each output's rows for all the samples. Error for a missing or
/// unknown input, a wrong sample shape, files of different sample counts or
/// of none, and outputs without the batch dimension.
std::vector<Prediction> predict(Session &s, const Artifact &a,
                                const std::vector<DataBinding> &data);

/// Where each of `outputNames` is written for `--out out`: one output to
/// `out` itself; several to OUT_NAME.npy beside it (OUT being `out` without
/// its .npy extension; characters other than letters, digits, '-', '_' and
/// '.' in NAME become '_'). Error if two outputs would share a file.
std::vector<std::string>
predictionPaths(const std::string &out,
                const std::vector<std::string> &outputNames);

/// Error, naming the path and the system's reason, if `path` cannot be
/// written: checked before predicting, so a long run does not end in a
/// failed write.
void checkWritable(const std::string &path);

/// Writes `p` as a .npy file, atomically, in the model's declared element
/// type (bf16, which NumPy lacks, as f32 holding the bf16 values).
void writePrediction(const Prediction &p, const std::string &path);

/// A prediction as both tools' `predict` commands ask for it.
struct PredictRequest {
  std::string artifact, checkpoint, out, device = "auto";
  std::vector<std::string> data; // NAME=FILE
  int64_t threads = 0;           // CPU threads; 0: TCC_NUM_THREADS or all
};

/// The whole command: checks the flags and --out, reads the artifact,
/// opens a session on the device chosen (runtime/core/DeviceSelect.h),
/// restores the checkpoint if one is given, predicts and writes the files.
/// Notes (the device chosen, checkpoints skipped) go to `log`, the summary
/// lines to stdout. Throws Error.
void runPrediction(const PredictRequest &r,
                   const std::function<void(const std::string &)> &log);

} // namespace tcc::rt

#endif // TCC_RUNTIME_TRAIN_PREDICT_H

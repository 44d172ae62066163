//===- TrainLoop.h - Running training steps fed by the data feeder -*- C++ -*-===//
//
// The loop that `tcc train` and `tcc bench` drive: it binds data files to the
// artifact's inputs, pulls batches from the asynchronous feeder, runs the
// train_step program and reports loss, throughput and progress. It also
// evaluates the forward program on held-out data.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TRAIN_TRAINLOOP_H
#define TCC_RUNTIME_TRAIN_TRAINLOOP_H

#include "runtime/core/Artifact.h"
#include "runtime/core/Session.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

/// `name=path`: the file that feeds the model input `name`.
struct DataBinding {
  std::string name;
  std::string path;
};

/// Parses "name=path" specs; throws Error naming a malformed one.
std::vector<DataBinding> parseDataBindings(const std::vector<std::string> &specs);

struct TrainOptions {
  std::vector<DataBinding> data;
  int64_t steps = -1;  // exactly one of steps and epochs is set
  int64_t epochs = -1;
  uint64_t seed = 0;
  bool shuffle = true;
  std::string metricsPath; // one JSON object per step, when set
  bool progress = true;    // live progress line on stderr
  size_t prefetch = 4;     // batches the feeder keeps ready
};

struct TrainResult {
  int64_t steps = 0;
  int64_t batchSize = 0;
  std::vector<float> losses;       // one per step
  std::vector<double> stepSeconds; // run time of each train_step
  double totalSeconds = 0;         // wall time of the loop
  double dataWaitSeconds = 0;      // time spent waiting for the feeder
};

/// Trains `session` (built from `artifact`). Throws Error on bad data,
/// mismatched inputs or a non-finite loss.
TrainResult train(Session &session, const Artifact &artifact,
                  const TrainOptions &opts);

struct EvalResult {
  int64_t samples = 0;  // samples evaluated (full batches only)
  double loss = 0;      // mean cross-entropy (classification outputs)
  double accuracy = 0;  // argmax over the last axis equals the label
};

/// Runs the forward program over every full batch of `data`, which must bind
/// each forward input and `labels` (integer classes shaped like the output
/// without its last axis).
EvalResult evaluate(Session &session, const Artifact &artifact,
                    const std::vector<DataBinding> &data);

/// The median of `v` (0 for an empty vector).
double median(std::vector<double> v);

} // namespace tcc::rt

#endif // TCC_RUNTIME_TRAIN_TRAINLOOP_H

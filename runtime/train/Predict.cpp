//===- Predict.cpp - The forward program over a data set ------------------===//
//
// Each batch is uploaded to the session, run through the forward program and
// its outputs downloaded, so every backend predicts alike. Inputs are
// converted once, as the training feeder converts them; the batches are
// gathered here rather than by the feeder because the feeder drops a last
// partial batch, which training wants and prediction must not do.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Predict.h"

#include "runtime/core/Backend.h"
#include "runtime/core/DeviceSelect.h"
#include "runtime/core/prelude/Half.h"
#include "runtime/feeder/DataFeeder.h"
#include "runtime/feeder/Npy.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/TrainSetup.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sys/stat.h>

using namespace tcc::rt;

int64_t tcc::rt::gatherPaddedBatch(const uint8_t *samples, size_t sampleBytes,
                                   int64_t numSamples, int64_t batch, int64_t k,
                                   uint8_t *out) {
  if (numSamples <= 0 || batch <= 0 || k < 0 || k * batch >= numSamples)
    throw Error("batch " + std::to_string(k) + " of " + std::to_string(batch) +
                " is past the " + std::to_string(numSamples) + " samples");
  int64_t first = k * batch;
  int64_t real = std::min(batch, numSamples - first);
  std::memcpy(out, samples + first * sampleBytes, real * sampleBytes);
  // Copies of a real sample rather than zeros: a padding row then holds
  // values the model handles (an index in range, a row that normalizes).
  const uint8_t *last = samples + (numSamples - 1) * sampleBytes;
  for (int64_t r = real; r < batch; ++r)
    std::memcpy(out + r * sampleBytes, last, sampleBytes);
  return real;
}

const Program &tcc::rt::forwardProgram(const Artifact &a) {
  const Program *p = a.findProgram("forward");
  if (!p)
    throw Error("the artifact has no forward program to predict with (its "
                "programs: " +
                [&] {
                  std::string names;
                  for (const Program &q : a.programs)
                    names += (names.empty() ? "" : ", ") + q.name;
                  return names;
                }() +
                ")");
  if (p->outputs.empty())
    throw Error("the forward program has no output");
  return *p;
}

std::vector<std::string> tcc::rt::forwardOutputNames(const Artifact &a) {
  const Program &p = forwardProgram(a);
  std::vector<std::string> names;
  auto it = a.meta.find("outputs");
  if (it != a.meta.end()) {
    const std::string &s = it->second;
    for (size_t start = 0; start <= s.size();) {
      size_t comma = s.find(", ", start);
      size_t end = comma == std::string::npos ? s.size() : comma;
      names.push_back(s.substr(start, end - start));
      start = comma == std::string::npos ? s.size() + 1 : comma + 2;
    }
  }
  // An artifact from before the names were kept, or a name with ", " in it.
  if (names.size() != p.outputs.size()) {
    names.clear();
    for (size_t i = 0; i < p.outputs.size(); ++i)
      names.push_back("output" + std::to_string(i));
  }
  return names;
}

Checkpoint tcc::rt::loadCheckpointOf(
    const Artifact &a, const std::string &from,
    const std::function<void(const std::string &)> &warn) {
  struct stat st;
  if (::stat(from.c_str(), &st) != 0)
    throw Error("--checkpoint " + from + ": " + std::strerror(errno));
  Checkpoint c;
  try {
    c = loadNewestCheckpoint(from, warn);
  } catch (const Error &e) {
    // Its messages speak of resuming; here the flag is --checkpoint.
    std::string msg = e.what(), resume = "cannot resume from ";
    if (msg.rfind(resume, 0) == 0)
      msg = "--checkpoint " + msg.substr(resume.size());
    throw Error(msg);
  }
  uint32_t crc = artifactIdentity(a);
  if (c.meta.artifactCrc != crc) {
    auto source = a.meta.find("source");
    throw Error(c.path +
                ": the checkpoint was written for another artifact "
                "(source '" +
                c.meta.artifactSource + "', CRC-32 " +
                hex32(c.meta.artifactCrc) + "); this one is source '" +
                (source == a.meta.end() ? "" : source->second) + "', CRC-32 " +
                hex32(crc));
  }
  return c;
}

RestoredCheckpoint tcc::rt::restoreForPrediction(
    Session &s, const Artifact &a, const std::string &from,
    const std::function<void(const std::string &)> &warn) {
  Checkpoint c = loadCheckpointOf(a, from, warn);
  // Only what the forward program reads: the parameters and any running
  // statistics. Checked whole before anything is written.
  const Program &p = forwardProgram(a);
  std::set<int32_t> read;
  for (const Instr &in : p.instrs)
    for (int32_t id : in.inputs)
      if (isCheckpointed(a.tensors[id].kind))
        read.insert(id);
  std::map<std::string, const CheckpointTensor *> byName;
  for (const CheckpointTensor &t : c.tensors)
    byName[t.name] = &t;
  std::vector<std::pair<int32_t, const CheckpointTensor *>> copies;
  for (int32_t id : read) {
    const TensorInfo &t = a.tensors[id];
    auto it = byName.find(t.name);
    if (it == byName.end())
      throw Error(c.path + ": has no tensor '" + t.name + "'");
    const CheckpointTensor &ct = *it->second;
    if (ct.dtype != t.dtype || ct.shape != t.shape ||
        static_cast<int64_t>(ct.size) != t.byteSize())
      throw Error(c.path + ": tensor '" + t.name + "' is " +
                  formatShape(ct.shape) + " " + dtypeName(ct.dtype) +
                  " in the checkpoint but " + formatShape(t.shape) + " " +
                  dtypeName(t.dtype) + " in the artifact");
    copies.push_back({id, &ct});
  }
  for (const auto &[id, ct] : copies)
    s.upload(id, c.data(*ct));
  return {c.path, c.meta.step};
}

std::vector<Prediction> tcc::rt::predict(Session &s, const Artifact &a,
                                         const std::vector<DataBinding> &data) {
  const Program &p = forwardProgram(a);
  if (p.inputs.empty())
    throw Error("the forward program reads no data: there is nothing to "
                "predict from");
  std::string inputNames;
  for (int32_t id : p.inputs)
    inputNames += (inputNames.empty() ? "" : ", ") + a.tensors[id].name;
  // Labels too: the forward program reads none, and a binding that feeds
  // nothing is a mistake worth hearing about.
  for (const DataBinding &b : data)
    if (std::none_of(p.inputs.begin(), p.inputs.end(),
                     [&](int32_t id) { return a.tensors[id].name == b.name; }))
      throw Error("--data " + b.name +
                  "=...: the model's forward program "
                  "has no input '" +
                  b.name + "' (inputs: " + inputNames + ")");
  int64_t batch = 0;
  std::vector<DataFeeder::Source> sources =
      detail::makeSources(a, p.inputs, data, batch);
  int64_t n = -1;
  std::vector<std::vector<uint8_t>> columns;
  std::vector<size_t> sampleBytes;
  for (size_t i = 0; i < sources.size(); ++i) {
    const DataFeeder::Source &src = sources[i];
    const std::string &file = src.array.path;
    columns.push_back(convertSamples(src)); // checks the sample shape
    int64_t count = src.array.shape[0];
    if (count == 0)
      throw Error(file + ": holds 0 samples; there is nothing to predict");
    if (i > 0 && count != n)
      throw Error(file + " has " + std::to_string(count) + " samples but " +
                  sources[0].array.path + " has " + std::to_string(n));
    n = count;
    sampleBytes.push_back(a.tensors[p.inputs[i]].byteSize() / batch);
  }
  std::vector<std::string> names = forwardOutputNames(a);
  std::vector<Prediction> out(p.outputs.size());
  for (size_t j = 0; j < p.outputs.size(); ++j) {
    const TensorInfo &t = a.tensors[p.outputs[j]];
    if (t.shape.empty() || t.shape[0] != batch)
      throw Error("the model's output '" + names[j] + "' has shape " +
                  formatShape(t.shape) +
                  ", not one row per sample of the "
                  "batch of " +
                  std::to_string(batch) +
                  ": it cannot be predicted sample by sample");
    out[j].name = names[j];
    out[j].dtype = t.dtype;
    out[j].hostDType = t.hostDType;
    out[j].shape = t.shape;
    out[j].shape[0] = n;
    out[j].bytes.resize(static_cast<size_t>(t.byteSize() / batch * n));
  }
  std::vector<uint8_t> staged, result;
  for (int64_t k = 0, e = paddedBatchCount(n, batch); k < e; ++k) {
    int64_t real = 0;
    for (size_t i = 0; i < columns.size(); ++i) {
      staged.resize(sampleBytes[i] * batch);
      real = gatherPaddedBatch(columns[i].data(), sampleBytes[i], n, batch, k,
                               staged.data());
      s.upload(p.inputs[i], staged.data());
    }
    s.run("forward");
    for (size_t j = 0; j < p.outputs.size(); ++j) {
      size_t rowBytes = out[j].bytes.size() / n;
      result.resize(rowBytes * batch);
      s.download(p.outputs[j], result.data());
      std::memcpy(out[j].bytes.data() + k * batch * rowBytes, result.data(),
                  real * rowBytes);
    }
  }
  return out;
}

std::vector<std::string>
tcc::rt::predictionPaths(const std::string &out,
                         const std::vector<std::string> &outputNames) {
  if (outputNames.size() == 1)
    return {out};
  std::string stem = out;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".npy") == 0)
    stem.resize(stem.size() - 4);
  std::vector<std::string> paths;
  std::set<std::string> seen;
  for (const std::string &name : outputNames) {
    std::string safe = name;
    for (char &c : safe)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' &&
          c != '_' && c != '.')
        c = '_';
    std::string path = stem + "_" + safe + ".npy";
    if (!seen.insert(path).second)
      throw Error("--out " + out +
                  ": two of the model's outputs would both "
                  "be written to " +
                  path);
    paths.push_back(path);
  }
  return paths;
}

void tcc::rt::checkWritable(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error("--out " + path + ": is a directory");
  std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw Error("--out " + path + ": cannot write " + tmp + ": " +
                std::strerror(errno));
  std::fclose(f);
  std::remove(tmp.c_str());
}

/// The NumPy type of a host element type.
static const char *npyDescr(HostDType h) {
  switch (h) {
  case HostDType::F64:
    return "<f8";
  case HostDType::F16:
    return "<f2";
  case HostDType::I8:
    return "|i1";
  case HostDType::I16:
    return "<i2";
  case HostDType::I32:
    return "<i4";
  case HostDType::U8:
    return "|u1";
  case HostDType::U16:
    return "<u2";
  case HostDType::U32:
    return "<u4";
  case HostDType::U64:
    return "<u8";
  default:
    return nullptr; // Native, BF16: by the runtime type
  }
}

/// bf16 words widened to f32, exactly: NumPy has no bf16.
static std::vector<uint8_t> widenBf16(const uint8_t *words, int64_t n) {
  std::vector<uint8_t> out(n * 4);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t w;
    std::memcpy(&w, words + 2 * i, 2);
    float f = bf16ToF32(w);
    std::memcpy(out.data() + 4 * i, &f, 4);
  }
  return out;
}

void tcc::rt::writePrediction(const Prediction &p, const std::string &path) {
  int64_t n = static_cast<int64_t>(p.bytes.size() / dtypeSize(p.dtype));
  if (p.hostDType == HostDType::Native) {
    switch (p.dtype) {
    case DType::F32:
      return writeNpy(path, "<f4", p.shape, p.bytes.data(), p.bytes.size());
    case DType::I64:
      return writeNpy(path, "<i8", p.shape, p.bytes.data(), p.bytes.size());
    case DType::F16:
      return writeNpy(path, "<f2", p.shape, p.bytes.data(), p.bytes.size());
    case DType::BF16: {
      std::vector<uint8_t> f = widenBf16(p.bytes.data(), n);
      return writeNpy(path, "<f4", p.shape, f.data(), f.size());
    }
    }
  }
  std::vector<uint8_t> host(n * hostDTypeSize(p.hostDType));
  runtimeToHost(p.dtype, p.bytes.data(), p.hostDType, host.data(), n);
  if (p.hostDType == HostDType::BF16) {
    std::vector<uint8_t> f = widenBf16(host.data(), n);
    return writeNpy(path, "<f4", p.shape, f.data(), f.size());
  }
  writeNpy(path, npyDescr(p.hostDType), p.shape, host.data(), host.size());
}

void tcc::rt::runPrediction(
    const PredictRequest &r,
    const std::function<void(const std::string &)> &log) {
  if (r.out.empty())
    throw Error("give the output file with --out OUT.npy");
  if (r.threads < 0 || r.threads > 4096)
    throw Error("--threads must be between 1 and 4096, got " +
                std::to_string(r.threads));
  DeviceRequest req = parseDeviceRequest(r.device);
  std::vector<DataBinding> data = parseDataBindings(r.data, "--data");
  // The CPU session and the kernels' thread pool read the count when they
  // start, which is below.
  if (r.threads > 0)
    ::setenv("TCC_NUM_THREADS", std::to_string(r.threads).c_str(), 1);
  Artifact a = readArtifact(r.artifact);
  std::vector<std::string> paths =
      predictionPaths(r.out, forwardOutputNames(a));
  for (const std::string &path : paths)
    checkWritable(path);
  DeviceChoice choice = selectDevice(req, a, r.artifact);
  if (!choice.note.empty())
    log(choice.note);
  std::unique_ptr<Session> s =
      openSession(deviceName(choice.device), a, ExecMode::Compiled);
  std::string from = "the artifact's initial parameters";
  if (!r.checkpoint.empty()) {
    RestoredCheckpoint c = restoreForPrediction(*s, a, r.checkpoint, log);
    from = c.path + " (step " + std::to_string(c.step) + ")";
  }
  detail::Clock::time_point start = detail::Clock::now();
  std::vector<Prediction> out = predict(*s, a, data);
  double seconds = detail::secondsSince(start);
  int64_t n = out[0].shape[0];
  int64_t batch = a.tensors[forwardProgram(a).inputs[0]].shape[0];
  int64_t batches = paddedBatchCount(n, batch);
  std::printf("predicted %lld samples in %lld batch(es) of %lld (%s, %lld "
              "padding rows dropped) in %.3f s with %s\n",
              (long long)n, (long long)batches, (long long)batch,
              deviceName(choice.device), (long long)(batches * batch - n),
              seconds, from.c_str());
  // Batch normalization in training mode (as the ONNX graph says) computes
  // with the batch's statistics: no row is independent of the others, and
  // the padding rows take part too. Said, since the numbers look plausible.
  const Program &fwd = forwardProgram(a);
  if (std::any_of(fwd.instrs.begin(), fwd.instrs.end(), [](const Instr &in) {
        return in.kernel == "batch_norm_train";
      }))
    log("note: the model normalizes over the batch (BatchNormalization in "
        "training mode): each output depends on the other samples of its "
        "batch" +
        std::string(batches * batch > n
                        ? ", and the last batch's on its " +
                              std::to_string(batches * batch - n) +
                              " padding rows (copies of the last sample)"
                        : "") +
        "; export the model in eval mode for per-sample predictions");
  for (size_t j = 0; j < out.size(); ++j) {
    writePrediction(out[j], paths[j]);
    std::printf("wrote %s: output '%s' %s\n", paths[j].c_str(),
                out[j].name.c_str(), formatShape(out[j].shape).c_str());
  }
}

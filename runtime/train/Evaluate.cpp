//===- Evaluate.cpp - The forward program over held-out data ---------------===//
//
// Classification outputs scored on the host: each batch is uploaded to the
// session, run through the forward program and its output downloaded, so
// every backend evaluates alike. The loss is the plain cross-entropy (no
// label smoothing) over positions not labelled the artifact's ignore_index.
//
//===----------------------------------------------------------------------===//
#include "runtime/feeder/DataFeeder.h"
#include "runtime/train/TrainLoop.h"
#include "runtime/train/TrainSetup.h"

#include <algorithm>
#include <cmath>

using namespace tcc::rt;
using namespace tcc::rt::detail;

EvalResult tcc::rt::evaluate(Session &session, const Artifact &a,
                             const std::vector<DataBinding> &data) {
  const Program &p = program(a, "forward");
  std::vector<float> out;
  return evaluate(a, data, [&](const std::vector<std::vector<uint8_t>> &in) {
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      if (static_cast<int64_t>(in[i].size()) !=
          a.tensors[p.inputs[i]].byteSize())
        throw Error("evaluation batch for input '" +
                    a.tensors[p.inputs[i]].name + "' has the wrong size");
      session.upload(p.inputs[i], in[i].data());
    }
    session.run("forward");
    out.resize(a.tensors[p.outputs[0]].numElements());
    session.download(p.outputs[0], out.data());
    return out.data();
  });
}

EvalResult tcc::rt::evaluate(const Artifact &a,
                             const std::vector<DataBinding> &data,
                             const ForwardFn &forward) {
  const Program &p = program(a, "forward");
  if (p.outputs.empty())
    throw Error("the forward program has no output");
  const TensorInfo &out = a.tensors[p.outputs[0]];
  if (out.dtype != DType::F32 || out.shape.size() < 2)
    throw Error("evaluation needs a class axis on the model's output, which "
                "has shape " +
                formatShape(out.shape));
  int64_t batch;
  auto sources = makeSources(a, p.inputs, data, batch, nullptr, "--eval-data");
  auto lab = std::find_if(data.begin(), data.end(), [](const DataBinding &b) {
    return b.name == "labels";
  });
  if (lab == data.end())
    throw Error("evaluation needs --eval-data labels=FILE");
  DataFeeder::Source labels;
  labels.name = "labels";
  labels.array = loadArray(lab->path);
  labels.target = DType::I64;
  labels.sampleShape.assign(out.shape.begin() + 1, out.shape.end() - 1);
  sources.push_back(std::move(labels));
  int64_t batches =
      sources[0].array.shape.empty() ? 0 : sources[0].array.shape[0] / batch;
  DataFeeder feeder(std::move(sources), batch, false, 0, batches);

  int64_t classes = out.shape.back();
  int64_t positions = out.numElements() / classes;
  // Positions labelled the loss's ignore_index (padding) are scored as the
  // loss treats them: not at all. Artifacts without one use PyTorch's -100.
  int64_t ignoreIndex = -100;
  if (auto it = a.meta.find("ignore_index"); it != a.meta.end())
    ignoreIndex = std::stoll(it->second);
  int64_t correct = 0, seen = 0;
  double lossSum = 0;
  DataFeeder::Batch b;
  while (feeder.next(b)) {
    const float *logits = forward(b.tensors);
    const int64_t *y =
        reinterpret_cast<const int64_t *>(b.tensors.back().data());
    for (int64_t i = 0; i < positions; ++i) {
      if (y[i] == ignoreIndex)
        continue;
      ++seen;
      const float *row = logits + i * classes;
      int64_t best = std::max_element(row, row + classes) - row;
      correct += best == y[i];
      if (y[i] < 0 || y[i] >= classes)
        throw Error("evaluation label " + std::to_string(y[i]) +
                    " is outside [0, " + std::to_string(classes) + ")");
      double mx = row[best], sum = 0;
      for (int64_t c = 0; c < classes; ++c)
        sum += std::exp(row[c] - mx);
      lossSum += mx + std::log(sum) - row[y[i]];
    }
  }
  EvalResult r;
  r.samples = batches * batch;
  r.accuracy = seen ? double(correct) / seen : 0;
  r.loss = seen ? lossSum / seen : 0;
  return r;
}

//===- Evaluate.cpp - The forward program over held-out data -------------===//
//
// Outputs are scored on the host: each batch is uploaded to the session, run
// through the forward program and its scored output downloaded, so every
// backend evaluates alike. Cross-entropy is the plain one (no label
// smoothing) over the positions not labelled the artifact's ignore_index.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Evaluate.h"

#include "runtime/train/Predict.h"
#include "runtime/train/TrainSetup.h"

#include <algorithm>
#include <cmath>

using namespace tcc::rt;
using namespace tcc::rt::detail;

/// The forward output named `name` (the graph's own loss) by the model's
/// output names the artifact lists, or -1.
static int32_t outputNamed(const Artifact &a, const Program &p,
                           const std::string &name) {
  std::vector<std::string> names = forwardOutputNames(a);
  for (size_t i = 0; i < names.size() && i < p.outputs.size(); ++i)
    if (names[i] == name)
      return p.outputs[i];
  return -1;
}

Evaluator::Evaluator(const Artifact &a, const std::vector<DataBinding> &data,
                     const std::string &tokens, int tokenBytes,
                     int64_t maxBatches)
    : a_(a), forward_(&program(a, "forward")) {
  const Program &p = *forward_;
  if (p.outputs.empty())
    throw Error("the forward program has no output");
  auto loss = a.meta.find("loss");
  std::string lossName = loss == a.meta.end() ? "cross_entropy" : loss->second;
  scored_ = p.outputs[0];
  if (lossName.rfind("output:", 0) == 0) {
    // The graph computes its loss from labels it takes as an input.
    kind_ = lossName.substr(7);
    graphLoss_ = true;
    scored_ = outputNamed(a, p, kind_);
    if (scored_ < 0)
      throw Error("evaluation: the forward program has no output '" + kind_ +
                  "' (the loss the artifact trains): it cannot compute the "
                  "loss");
  } else if (lossName == "cross_entropy" || lossName == "mse") {
    kind_ = lossName;
  } else {
    throw Error("evaluation: the artifact's loss '" + lossName +
                "' is not one evaluation computes");
  }
  const TensorInfo &out = a.tensors[scored_];
  if (out.dtype != DType::F32)
    throw Error("evaluation: the forward output '" + out.name + "' is " +
                dtypeName(out.dtype) + ", not f32");
  if (!graphLoss_ && kind_ == "cross_entropy" && out.shape.size() < 2)
    throw Error("evaluation needs a class axis on the model's output, which "
                "has shape " +
                formatShape(out.shape));

  if (auto it = a.meta.find("ignore_index"); it != a.meta.end())
    ignoreIndex_ = std::stoll(it->second);
  if (!tokens.empty()) {
    if (!data.empty())
      throw Error("give either --eval-data or --eval-tokens, not both");
    if (graphLoss_ || kind_ != "cross_entropy")
      throw Error("--eval-tokens needs a model trained with cross-entropy "
                  "over its token outputs; this one's loss is " +
                  lossName);
    int32_t input = tokenInput(a, p, nullptr, "--eval-tokens");
    const TensorInfo &in = a.tensors[input];
    if (p.inputs.size() != 1 || out.shape.size() != 3 ||
        out.shape[0] != in.shape[0] || out.shape[1] != in.shape[1])
      throw Error("--eval-tokens needs a model whose forward program maps "
                  "token ids [N, T] to logits [N, T, V]; its output has "
                  "shape " +
                  formatShape(out.shape));
    TrainOptions o;
    o.tokenBytes = tokenBytes;
    o.shuffle = false; // read in order, from the start
    corpus_ =
        std::make_shared<const TokenCorpus>(tokens, tokenOptions(a, in, o));
    batch_ = in.shape[0];
    if (corpus_->numWindows() < batch_)
      throw Error("--eval-tokens " + tokens + ": " +
                  std::to_string(corpus_->numWindows()) +
                  " windows, fewer than the batch size " +
                  std::to_string(batch_));
    batches_ = corpus_->numWindows() / batch_;
  } else {
    if (data.empty())
      throw Error("evaluation needs data: --eval-data NAME=FILE ... or "
                  "--eval-tokens FILE");
    sources_ = makeSources(a, p.inputs, data, batch_, nullptr, "--eval-data");
    // A graph computing its own loss takes its targets as an input (bound
    // by name above); the built-in losses read `labels` beside the inputs.
    if (!graphLoss_) {
      auto lab =
          std::find_if(data.begin(), data.end(),
                       [](const DataBinding &b) { return b.name == "labels"; });
      if (lab == data.end())
        throw Error("evaluation needs --eval-data labels=FILE");
      DataFeeder::Source labels;
      labels.name = "labels";
      labels.array = loadArray(lab->path);
      if (kind_ == "mse") {
        labels.target = DType::F32;
        labels.sampleShape.assign(out.shape.begin() + 1, out.shape.end());
      } else {
        labels.target = DType::I64;
        labels.sampleShape.assign(out.shape.begin() + 1, out.shape.end() - 1);
      }
      sources_.push_back(std::move(labels));
    }
    // The feeder checks sample counts and shapes now, not at the first
    // evaluation many steps into a run.
    DataFeeder check(sources_, batch_, false, 0, 0);
    batches_ = check.batchesPerEpoch();
  }
  if (maxBatches >= 0)
    batches_ = std::min(batches_, maxBatches);
}

Evaluator::~Evaluator() = default;

EvalResult Evaluator::run(const ForwardFn &forward) const {
  const TensorInfo &out = a_.tensors[scored_];
  int64_t positions = 0, classes = 1;
  if (!graphLoss_ && kind_ == "cross_entropy") {
    classes = out.shape.back();
    positions = out.numElements() / classes;
  }
  int64_t correct = 0, seen = 0;
  double lossSum = 0;
  auto score = [&](const std::vector<std::vector<uint8_t>> &tensors) {
    const float *o = forward(tensors);
    if (graphLoss_) { // the graph's own loss, a scalar
      lossSum += o[0];
      ++seen;
      return;
    }
    if (kind_ == "mse") {
      const float *y = reinterpret_cast<const float *>(tensors.back().data());
      double sum = 0;
      int64_t n = out.numElements();
      for (int64_t i = 0; i < n; ++i)
        sum += (double(o[i]) - y[i]) * (double(o[i]) - y[i]);
      lossSum += sum / std::max<int64_t>(n, 1);
      ++seen;
      return;
    }
    const int64_t *y = reinterpret_cast<const int64_t *>(tensors.back().data());
    for (int64_t i = 0; i < positions; ++i) {
      if (y[i] == ignoreIndex_)
        continue;
      ++seen;
      const float *row = o + i * classes;
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
  };

  if (corpus_) {
    // Non-overlapping windows from the start of the corpus, the same ones
    // every time, so evaluations along a run compare.
    int64_t T = corpus_->seqLen();
    std::vector<std::vector<uint8_t>> tensors(2);
    std::vector<int64_t> w(static_cast<size_t>(T) + 1);
    for (int64_t b = 0; b < batches_; ++b) {
      for (auto &t : tensors)
        t.resize(sizeof(int64_t) * batch_ * T);
      int64_t *x = reinterpret_cast<int64_t *>(tensors[0].data());
      int64_t *y = reinterpret_cast<int64_t *>(tensors[1].data());
      for (int64_t k = 0; k < batch_; ++k) {
        corpus_->window(b * batch_ + k, w.data());
        std::copy(w.begin(), w.end() - 1, x + k * T);
        std::copy(w.begin() + 1, w.end(), y + k * T);
      }
      score(tensors);
    }
  } else {
    DataFeeder feeder(sources_, batch_, false, 0, batches_);
    DataFeeder::Batch b;
    while (feeder.next(b))
      score(b.tensors);
  }
  EvalResult r;
  r.samples = batches_ * batch_;
  r.kind = kind_;
  r.tokens = corpus_ != nullptr;
  r.hasAccuracy = !graphLoss_ && kind_ == "cross_entropy" && !corpus_;
  r.accuracy = r.hasAccuracy && seen ? double(correct) / seen : 0;
  r.loss = seen ? lossSum / seen : 0;
  return r;
}

EvalResult Evaluator::run(Session &session) const {
  const Program &p = *forward_;
  std::vector<float> out;
  TraceScope span(session.tracer(), "eval", true);
  if (span.active())
    span.name("evaluation");
  return run([&](const std::vector<std::vector<uint8_t>> &in) {
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      if (static_cast<int64_t>(in[i].size()) !=
          a_.tensors[p.inputs[i]].byteSize())
        throw Error("evaluation batch for input '" +
                    a_.tensors[p.inputs[i]].name + "' has the wrong size");
      session.upload(p.inputs[i], in[i].data());
    }
    session.run("forward");
    out.resize(a_.tensors[scored_].numElements());
    session.download(scored_, out.data());
    return out.data();
  });
}

EvalResult tcc::rt::evaluate(Session &session, const Artifact &a,
                             const std::vector<DataBinding> &data) {
  return Evaluator(a, data, "", 0, -1).run(session);
}

EvalResult tcc::rt::evaluate(const Artifact &a,
                             const std::vector<DataBinding> &data,
                             const ForwardFn &forward) {
  return Evaluator(a, data, "", 0, -1).run(forward);
}

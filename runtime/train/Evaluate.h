//===- Evaluate.h - The forward program over held-out data ------*- C++ -*-===//
//
// An Evaluator holds held-out data, checked against the model once, and
// scores the forward program on it as often as asked: at the end of a run
// (tcc train --eval-data) and every N steps while training (--eval-every,
// EvalDuringTraining.h). Scoring is on the host from the forward program's
// output, so every backend evaluates alike; what it computes follows the
// loss the artifact was compiled with (meta "loss"):
//   cross_entropy  mean cross-entropy over every position, and accuracy
//                  (argmax of the class axis equals the label); over a
//                  token corpus, the perplexity exp(loss) instead.
//   mse            mean squared error over every element (no accuracy).
//   output:NAME    the forward program's own output NAME (the graph's loss;
//                  labels are one of its inputs), averaged over batches.
// The loss is the training loss' unregularized value: the same formula on
// the same data gives the same number as a training step's loss.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TRAIN_EVALUATE_H
#define TCC_RUNTIME_TRAIN_EVALUATE_H

#include "runtime/feeder/DataFeeder.h"
#include "runtime/train/TrainLoop.h"

#include <memory>
#include <string>
#include <vector>

namespace tcc::rt {

class Evaluator {
public:
  /// Held-out data: NAME=FILE bindings of every forward input and `labels`
  /// (unless the graph takes its labels as an input), or `tokens` (a file,
  /// glob or directory of token shards, read like --tokens with width
  /// `tokenBytes`, 0: the header's or u8) for a language model. At most
  /// `maxBatches` batches are scored each time (-1: all). Throws Error now
  /// for data that does not fit the model (a missing input, a sample shape
  /// the model does not take, fewer samples than a batch).
  Evaluator(const Artifact &a, const std::vector<DataBinding> &data,
            const std::string &tokens, int tokenBytes, int64_t maxBatches);
  ~Evaluator();

  /// The output tensor scored on the host.
  int32_t scoredOutput() const { return scored_; }
  /// Scores the forward program over the batches: `forward` gets one batch
  /// (a tensor per forward input, in its order, then the labels when they
  /// are no forward input), runs the forward program and returns the
  /// values of scoredOutput() (valid until the next call).
  EvalResult run(const ForwardFn &forward) const;
  /// The same on `session`: each batch is uploaded into the forward
  /// program's inputs, run and the scored output downloaded. Uploads and
  /// downloads are synchronous, so the caller must only make sure no other
  /// program is still running (the training loop evaluates at steps it has
  /// finished).
  EvalResult run(Session &session) const;

private:
  const Artifact &a_;
  const Program *forward_ = nullptr;
  std::string kind_;       // "cross_entropy", "mse" or the output's name
  bool graphLoss_ = false; // --loss output:NAME
  /// Labels the loss ignores (padding): not scored. PyTorch's -100 for
  /// artifacts that do not record one.
  int64_t ignoreIndex_ = -100;
  int32_t scored_ = -1;
  int64_t batch_ = 0, batches_ = 0;
  std::vector<DataFeeder::Source> sources_;   // --eval-data
  std::shared_ptr<const TokenCorpus> corpus_; // --eval-tokens
};

} // namespace tcc::rt

#endif // TCC_RUNTIME_TRAIN_EVALUATE_H

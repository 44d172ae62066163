//===- EvalDuringTraining.cpp - Evaluation every N steps ------------------===//
#include "runtime/train/EvalDuringTraining.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

using namespace tcc::rt;
using namespace tcc::rt::detail;

std::unique_ptr<PeriodicEval> PeriodicEval::make(const Artifact &a,
                                                 const TrainOptions &opts,
                                                 int64_t totalSteps) {
  if (opts.evalEvery < 0)
    throw Error("--eval-every must be positive, got " +
                std::to_string(opts.evalEvery));
  if (opts.evalBatches == 0 || opts.evalBatches < -1)
    throw Error("--eval-batches must be at least 1, got " +
                std::to_string(opts.evalBatches));
  if (opts.evalEvery == 0)
    return nullptr;
  if (opts.evalData.empty() && opts.evalTokens.empty())
    throw Error("--eval-every needs held-out data: --eval-data NAME=FILE ... "
                "or --eval-tokens FILE");
  int64_t cap = opts.evalBatches > 0 ? opts.evalBatches : kDefaultEvalBatches;
  auto e = std::make_unique<Evaluator>(a, opts.evalData, opts.evalTokens,
                                       opts.tokenBytes, cap);
  return std::unique_ptr<PeriodicEval>(
      new PeriodicEval(std::move(e), opts.evalEvery, totalSteps));
}

const EvalResult &PeriodicEval::run(Session &s, int64_t step, TrainResult &r) {
  EvalPoint p;
  p.step = step;
  p.result = eval_->run(s);
  r.evals.push_back(std::move(p));
  return r.evals.back().result;
}

std::string detail::evalSummary(const EvalResult &e) {
  char buf[96];
  if (e.tokens)
    std::snprintf(buf, sizeof buf, "eval loss %.4f ppl %.2f", e.loss,
                  std::exp(e.loss));
  else if (e.hasAccuracy)
    std::snprintf(buf, sizeof buf, "eval loss %.4f acc %.2f%%", e.loss,
                  e.accuracy * 100);
  else
    std::snprintf(buf, sizeof buf, "eval loss %.4f", e.loss);
  return buf;
}

void detail::addEvalFields(nlohmann::json &line, const EvalResult &e) {
  line["eval_loss"] = e.loss;
  if (e.tokens)
    line["eval_ppl"] = std::exp(e.loss);
  if (e.hasAccuracy)
    line["eval_accuracy"] = e.accuracy;
}

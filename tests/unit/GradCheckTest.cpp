//===- GradCheckTest.cpp - Finite-difference check of every gradient rule -===//
//
// For each differentiable tcc op, a tiny @train_step computes
// loss = sum(op(params...) * w) with a random weight w, so every output
// element matters with a different factor. tcc-autodiff builds the gradients,
// the CPU code generator and runtime execute them, and each gradient element
// is compared with a central finite difference of the same compiled loss.
// A last test checks that every op with a gradient rule has a case. The
// cases are in GradCheckCases*.cpp, by the ops they test (GradCheck.h).
//
//===----------------------------------------------------------------------===//
#include "GradCheck.h"

#include "compiler/codegen/ScheduleBuilder.h"
#include "dialects/tcc/TccDialect.h"
#include "dialects/tcc/TccOps.h"
#include "passes/Passes.h"
#include "runtime/cpu/CpuSession.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

using namespace mlir;
namespace rt = ::tcc::rt;
using namespace gradcheck;

namespace {

std::vector<Case> cases() {
  std::vector<Case> all;
  for (auto group : {coreCases, mathCases, indexCases, attentionCases,
                     logicCases, convCases})
    for (Case &c : group())
      all.push_back(std::move(c));
  return all;
}

std::string moduleText(const Case &c) {
  std::string args, sep;
  for (const Param &p : c.params) {
    args += sep + "%" + p.name + ": tensor<" + p.type +
            "> {tcc.kind = \"param\", tcc.name = \"" + p.name + "\"}";
    sep = ", ";
  }
  args += sep + "%w: tensor<" + c.resultType +
          "> {tcc.kind = \"input\", tcc.name = \"w\"}";
  if (!c.labelsType.empty())
    args += ", %labels: tensor<" + c.labelsType +
            "> {tcc.kind = \"input\", tcc.name = \"labels\"}";
  std::string ty = "tensor<" + c.resultType + ">";
  int64_t rank = c.resultType == "f32" ? 0
                                       : std::count(c.resultType.begin(),
                                                    c.resultType.end(), 'x');
  std::string axes;
  for (int64_t i = 0; i < rank; ++i)
    axes += (i ? ", " : "") + std::to_string(i);
  std::string s = "func.func @train_step(" + args +
                  ") -> (tensor<f32> {tcc.kind = \"loss\"}) {\n  " + c.body +
                  "\n  %m = tcc.mul %y, %w : (" + ty + ", " + ty + ") -> " +
                  ty + "\n";
  if (rank == 0)
    s += "  return %m : tensor<f32>\n}\n";
  else
    s += "  %s = tcc.reduce_sum %m {axes = array<i64: " + axes + ">} : " + ty +
         " -> tensor<f32>\n  return %s : tensor<f32>\n}\n";
  return s;
}

class GradCheck : public ::testing::TestWithParam<Case> {};

TEST_P(GradCheck, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  MLIRContext ctx;
  ctx.loadDialect<mlir::tcc::TccDialect, func::FuncDialect>();
  std::string text = moduleText(c);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(module) << text;
  PassManager pm(&ctx);
  // As the pipeline does: convolutions that read padding only through some
  // taps are differentiated in their trimmed form (the other cases keep
  // their ops).
  pm.addNestedPass<func::FuncOp>(mlir::tcc::createTrimConvTapsPass());
  pm.addPass(mlir::tcc::createAutodiffPass());
  ASSERT_TRUE(succeeded(pm.run(*module))) << text;

  std::mt19937 rng(42);
  std::map<std::string, std::vector<float>> init;
  for (const Param &p : c.params) {
    int64_t n = 1;
    std::string dims = p.type;
    for (size_t pos; (pos = dims.find('x')) != std::string::npos;
         dims = dims.substr(pos + 1))
      n *= std::stoll(dims.substr(0, pos));
    std::uniform_real_distribution<float> d(p.lo, p.hi);
    for (int64_t i = 0; i < n; ++i) {
      float v = d(rng);
      // Keep relu inputs away from its kink, where the derivative jumps.
      if (c.op == "tcc.relu" && std::fabs(v) < 0.2f)
        v = v < 0 ? v - 0.2f : v + 0.2f;
      for (float k : c.kinks)
        if (std::fabs(v - k) < 0.1f)
          v = v < k ? k - 0.1f : k + 0.1f;
      init[p.name].push_back(v);
    }
    // Max pooling switches its argmax where two inputs are within the
    // finite-difference step: use distinct values at least 0.05 apart
    // (reduce_max/min likewise: a tie of three would be 1/3 each by the
    // rule but 1/2 by the central difference).
    if (c.op == "tcc.max_pool2d" || c.op == "tcc.reduce_max" ||
        c.op == "tcc.reduce_min") {
      std::vector<float> &v = init[p.name];
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = 0.05f * float(i) - 0.025f * float(v.size());
      std::shuffle(v.begin(), v.end(), rng);
    }
    // Pairs of maximum/minimum either tie exactly (the same grid value) or
    // are 0.1 apart, beyond the step.
    if (c.op == "tcc.maximum" || c.op == "tcc.minimum") {
      std::vector<float> &v = init[p.name];
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = 0.1f * float((i * 5 + p.name.size()) % 7) - 0.3f;
    }
  }
  rt::Artifact a;
  ::tcc::ScheduleBuilder builder(a, init);
  auto fn = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(succeeded(builder.lower(fn, "train_step")));
  rt::cpu::CpuSession s(a, rt::ExecMode::Compiled);
  const rt::Program &prog = *a.findProgram("train_step");
  ASSERT_EQ(prog.outputs.size(), 1 + c.params.size());
  for (int32_t id : prog.inputs) {
    const rt::TensorInfo &t = a.tensors[id];
    if (t.dtype == rt::DType::F32) {
      std::uniform_real_distribution<float> d(-1, 1);
      float *p = static_cast<float *>(s.data(id));
      for (int64_t i = 0; i < t.numElements(); ++i)
        p[i] = d(rng);
    } else {
      std::uniform_int_distribution<int64_t> d(0, c.classes - 1);
      int64_t *p = static_cast<int64_t *>(s.data(id));
      for (int64_t i = 0; i < t.numElements(); ++i)
        p[i] = d(rng);
    }
  }
  auto loss = [&] {
    s.run("train_step");
    return (double)*static_cast<const float *>(s.data(prog.outputs[0]));
  };
  loss();
  // Read every analytic gradient before the finite differences rerun the step.
  std::vector<std::vector<float>> analytic;
  for (size_t k = 0; k < c.params.size(); ++k) {
    const float *g = static_cast<const float *>(s.data(prog.outputs[1 + k]));
    analytic.emplace_back(g, g + a.tensors[prog.outputs[1 + k]].numElements());
  }
  for (size_t k = 0; k < c.params.size(); ++k) {
    float *p = static_cast<float *>(s.data(c.params[k].name));
    const float eps = 1e-2f;
    for (int64_t i = 0; i < (int64_t)analytic[k].size(); ++i) {
      float saved = p[i];
      p[i] = saved + eps;
      double up = loss();
      p[i] = saved - eps;
      double down = loss();
      p[i] = saved;
      double fd = (up - down) / (2 * eps);
      EXPECT_NEAR(analytic[k][i], fd, 2e-3 + 5e-3 * std::fabs(fd))
          << c.name << ": d loss / d " << c.params[k].name << "[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllRules, GradCheck, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return info.param.name; });

TEST(GradCheckCoverage, EveryGradientRuleHasACase) {
  MLIRContext ctx;
  ctx.loadDialect<mlir::tcc::TccDialect>();
  std::set<std::string> covered;
  for (const Case &c : cases())
    covered.insert(c.op);
  int withRule = 0;
  for (RegisteredOperationName op : ctx.getRegisteredOperations()) {
    if (!op.hasInterface<mlir::tcc::GradientOpInterface>())
      continue;
    ++withRule;
    EXPECT_TRUE(covered.count(op.getStringRef().str()))
        << op.getStringRef().str() << " has a gradient rule but no check";
  }
  EXPECT_GE(withRule, 15);
}

} // namespace

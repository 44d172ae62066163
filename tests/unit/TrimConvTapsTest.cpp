//===- TrimConvTapsTest.cpp - Trimmed convolutions compute the same step --===//
//
// tcc-trim-conv-taps claims an exact rewrite. For a sweep of small
// convolutions (maps of 1 to 5 rows, kernels of 2 and 3 taps, strides,
// dilations, asymmetric pads), a tiny @train_step (loss = sum(conv * g))
// is differentiated with and without the pass, both run on the CPU runtime
// from the same values, and the loss and the gradients of input, weight
// and bias must agree (the dropped taps' weight gradient is zero on both
// sides). The sweep must also trim some cases and turn some into GEMMs
// (1x1 outputs), or it would test nothing.
// Finite differences of the trimmed form are in GradCheckCasesConv.cpp.
//
//===----------------------------------------------------------------------===//
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

#include <cmath>
#include <random>

using namespace mlir;
namespace rt = ::tcc::rt;

namespace {

struct Conv {
  int64_t h, w, k, s, d, padTop, padBottom, padLeft, padRight;
  int64_t outH() const { return out(h, padTop, padBottom); }
  int64_t outW() const { return out(w, padLeft, padRight); }
  int64_t out(int64_t in, int64_t pb, int64_t pe) const {
    int64_t span = in + pb + pe - d * (k - 1) - 1;
    return span < 0 ? 0 : span / s + 1;
  }
};

constexpr int64_t kN = 2, kC = 3, kO = 4;

std::string dims(std::initializer_list<int64_t> ds) {
  std::string r;
  for (int64_t d : ds)
    r += std::to_string(d) + "x";
  return "tensor<" + r + "f32>";
}

std::string moduleText(const Conv &c) {
  std::string x = dims({kN, kC, c.h, c.w}), w = dims({kO, kC, c.k, c.k}),
              b = dims({kO}), y = dims({kN, kO, c.outH(), c.outW()});
  auto i = [](int64_t v) { return std::to_string(v); };
  return "func.func @train_step(%x: " + x +
         " {tcc.kind = \"param\", tcc.name = \"x\"}, %w: " + w +
         " {tcc.kind = \"param\", tcc.name = \"w\"}, %b: " + b +
         " {tcc.kind = \"param\", tcc.name = \"b\"}, %g: " + y +
         " {tcc.kind = \"input\", tcc.name = \"g\"}) -> (tensor<f32> "
         "{tcc.kind = \"loss\"}) {\n"
         "  %y = tcc.conv2d %x, %w, %b {strides = array<i64: " +
         i(c.s) + ", " + i(c.s) + ">, pads = array<i64: " + i(c.padTop) + ", " +
         i(c.padLeft) + ", " + i(c.padBottom) + ", " + i(c.padRight) +
         ">, dilations = array<i64: " + i(c.d) + ", " + i(c.d) +
         ">, groups = 1 : i64} : (" + x + ", " + w + ", " + b + ") -> " + y +
         "\n  %m = tcc.mul %y, %g : (" + y + ", " + y + ") -> " + y +
         "\n  %s = tcc.reduce_sum %m {axes = array<i64: 0, 1, 2, 3>} : " + y +
         " -> tensor<f32>\n  return %s : tensor<f32>\n}\n";
}

/// The loss and the gradients of x, w, b, with or without the pass; sets
/// `trimmed` when the pass left a tcc.slice, `gemm` a tcc.matmul.
std::vector<std::vector<float>> run(const Conv &c, bool trim, bool &trimmed,
                                    bool &gemm) {
  MLIRContext ctx;
  ctx.loadDialect<mlir::tcc::TccDialect, func::FuncDialect>();
  std::string text = moduleText(c);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  EXPECT_TRUE(module) << text;
  if (!module)
    return {};
  PassManager pm(&ctx);
  if (trim)
    pm.addNestedPass<func::FuncOp>(mlir::tcc::createTrimConvTapsPass());
  pm.addPass(mlir::tcc::createAutodiffPass());
  EXPECT_TRUE(succeeded(pm.run(*module))) << text;
  trimmed = gemm = false;
  module->walk([&](mlir::tcc::SliceOp) { trimmed = true; });
  module->walk([&](mlir::tcc::MatmulOp) { gemm = true; });

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::map<std::string, std::vector<float>> init;
  for (auto [name, n] :
       {std::pair<std::string, int64_t>{"x", kN * kC * c.h * c.w},
        {"w", kO * kC * c.k * c.k},
        {"b", kO}})
    for (int64_t i = 0; i < n; ++i)
      init[name].push_back(u(rng));
  rt::Artifact a;
  ::tcc::ScheduleBuilder builder(a, init);
  auto fn = module->lookupSymbol<func::FuncOp>("train_step");
  EXPECT_TRUE(succeeded(builder.lower(fn, "train_step")));
  rt::cpu::CpuSession s(a, rt::ExecMode::Compiled);
  const rt::Program &prog = *a.findProgram("train_step");
  float *g = static_cast<float *>(s.data("g"));
  for (int64_t i = 0; i < kN * kO * c.outH() * c.outW(); ++i)
    g[i] = u(rng);
  s.run("train_step");
  std::vector<std::vector<float>> out;
  for (int32_t id : prog.outputs) {
    const float *p = static_cast<const float *>(s.data(id));
    out.emplace_back(p, p + a.tensors[id].numElements());
  }
  return out;
}

TEST(TrimConvTaps, SameLossAndGradients) {
  int cases = 0, trimmedCases = 0, gemmCases = 0;
  for (int64_t h : {1, 2, 3, 5})
    for (int64_t k : {2, 3})
      for (int64_t s : {1, 2})
        for (int64_t d : {1, 2})
          for (int64_t pb : {0, 1, 2})
            for (int64_t pe : {0, 1, 2}) {
              // Pads past the window's extent are not what anyone writes.
              if (pb > d * (k - 1) || pe > d * (k - 1))
                continue;
              // Rows padded (pb, pe), columns (pe, pb) of a map one wider.
              Conv c{h, h + 1, k, s, d, pb, pe, pe, pb};
              if (c.outH() < 1 || c.outW() < 1)
                continue;
              ++cases;
              bool trimmed = false, gemm = false, unused = false;
              auto ref = run(c, false, unused, unused);
              auto got = run(c, true, trimmed, gemm);
              trimmedCases += trimmed;
              gemmCases += gemm;
              ASSERT_EQ(ref.size(), 4u);
              ASSERT_EQ(got.size(), ref.size());
              for (size_t o = 0; o < ref.size(); ++o) {
                ASSERT_EQ(got[o].size(), ref[o].size());
                for (size_t i = 0; i < ref[o].size(); ++i)
                  ASSERT_NEAR(got[o][i], ref[o][i],
                              1e-5 + 1e-5 * std::fabs(ref[o][i]))
                      << moduleText(c) << "output " << o << " [" << i << "]";
              }
            }
  EXPECT_GT(cases, 100);
  EXPECT_GT(trimmedCases, 20) << "of " << cases;
  EXPECT_GT(gemmCases, 5) << "of " << cases;
}

} // namespace

//===- FusedCodegenTest.cpp - Generated kernels vs the library kernels ----===//
//
// Every case is a function of plain tcc ops. It is lowered twice: as is (one
// reference runtime kernel per op) and after tcc-fuse (generated kernels,
// compiled by the host C++ compiler into one library for all cases). Both
// run on the same random inputs; the generated results must match the
// reference ones, and be bit-identical with 1 and 3 threads. The fast exp,
// erf and tanh of the generated prelude are checked against libm.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedCodegen.h"
#include "compiler/codegen/FusedCodegenInternal.h"
#include "compiler/codegen/HostCompile.h"
#include "compiler/codegen/ScheduleBuilder.h"
#include "dialects/tcc/TccDialect.h"
#include "dialects/tcc/TccOps.h"
#include "passes/Passes.h"
#include "runtime/core/ArtifactFormat.h"
#include "runtime/core/ThreadPool.h"
#include "runtime/core/prelude/FastExp.h"
#include "runtime/cpu/CpuSession.h"
#include "runtime/cpu/FusedLibrary.h"
#include "tests/unit/FusedTestModule.h"
#include "tests/unit/UnaryFnFusedCase.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <random>
#include <unistd.h>

using namespace mlir;
namespace rt = ::tcc::rt;

namespace {

struct Arg {
  std::string name, type; // type like "4x8xf32", "3xi64", "4x8xi1"
  float lo = -2, hi = 2;  // f32: uniform range; i64: classes = hi
};

struct Case {
  std::string name;
  std::vector<Arg> args;
  std::string body;                 // ops; returns %r0, %r1, ...
  std::vector<std::string> results; // result types
  int minFused = 1;                 // tcc.fused ops tcc-fuse must form
  /// Results that are last-axis zero pads: (result, unpadded columns). The
  /// case must become one generated kernel and nothing else (no slice,
  /// slice_grad or copy kernels around it).
  std::vector<std::pair<int, int64_t>> padded = {};
  bool oneKernel = false;
};

/// Every function of the unary family in one region (UnaryFnFusedCase.h).
Case unaryFnCase() {
  Case c{
      "unary_fn_family",
      {{"x", "6x33xf32", -4, 4},
       {"w", "6x33xf32", -30, 30},
       {"dy", "6x33xf32"}},
      ::tcc::test::unaryFnFamilyBody(),
      std::vector<std::string>(::tcc::test::kUnaryFnFamilyResults, "6x33xf32")};
  return c;
}

std::vector<Case> cases() {
  return {
      unaryFnCase(),
      {"elementwise_chain",
       {{"x", "4x8x20xf32"}, {"b", "20xf32"}, {"m", "4x1x20xf32"}},
       R"(%0 = tcc.add %x, %b : (tensor<4x8x20xf32>, tensor<20xf32>) -> tensor<4x8x20xf32>
  %1 = tcc.gelu %0 {approximate = "none"} : tensor<4x8x20xf32>
  %c = tcc.constant dense<0.5> : tensor<f32>
  %2 = tcc.mul %1, %c : (tensor<4x8x20xf32>, tensor<f32>) -> tensor<4x8x20xf32>
  %3 = tcc.tanh %2 : tensor<4x8x20xf32>
  %4 = tcc.sub %3, %m : (tensor<4x8x20xf32>, tensor<4x1x20xf32>) -> tensor<4x8x20xf32>
  %5 = tcc.sigmoid %4 : tensor<4x8x20xf32>
  %6 = tcc.erf %5 : tensor<4x8x20xf32>
  %r0 = tcc.exp %6 : tensor<4x8x20xf32>
  %r1 = tcc.neg %0 : tensor<4x8x20xf32>)",
       {"4x8x20xf32", "4x8x20xf32"}},
      {"math_and_grads",
       {{"x", "6x33xf32", 0.2f, 3.0f},
        {"dy", "6x33xf32"},
        {"y", "6x33xf32", -0.9f, 0.9f}},
       R"(%0 = tcc.sqrt %x : tensor<6x33xf32>
  %1 = tcc.log %x : tensor<6x33xf32>
  %2 = tcc.pow_scalar %x {exponent = 3.7 : f64} : tensor<6x33xf32>
  %3 = tcc.pow_scalar_grad %dy, %x {exponent = 0.5 : f64} : tensor<6x33xf32>
  %4 = tcc.pow %x, %y : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %5 = tcc.sqrt_grad %dy, %0 : tensor<6x33xf32>
  %6 = tcc.tanh_grad %dy, %y : tensor<6x33xf32>
  %7 = tcc.sigmoid_grad %dy, %y : tensor<6x33xf32>
  %8 = tcc.erf_grad %dy, %y : tensor<6x33xf32>
  %9 = tcc.relu %y : tensor<6x33xf32>
  %10 = tcc.relu_grad %dy, %y : tensor<6x33xf32>
  %11 = tcc.div %dy, %x : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %12 = tcc.gelu %y {approximate = "tanh"} : tensor<6x33xf32>
  %13 = tcc.gelu_grad %dy, %y {approximate = "tanh"} : tensor<6x33xf32>
  %14 = tcc.gelu_grad %dy, %x {approximate = "none"} : tensor<6x33xf32>
  %15 = tcc.add %1, %2 : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %16 = tcc.add %15, %3 : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %17 = tcc.add %16, %4 : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %18 = tcc.add %5, %6 : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %19 = tcc.add %7, %8 : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %20 = tcc.add %9, %10 : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %21 = tcc.add %11, %12 : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %r0 = tcc.add %17, %18 : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %r1 = tcc.add %19, %20 : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %r2 = tcc.add %21, %13 : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>
  %r3 = tcc.mul %14, %r0 : (tensor<6x33xf32>, tensor<6x33xf32>) -> tensor<6x33xf32>)",
       {"6x33xf32", "6x33xf32", "6x33xf32", "6x33xf32"}},
      {"where_broadcast",
       {{"c", "3x1x16xi1"},
        {"a", "3x5x16xf32"},
        {"s", "f32"},
        {"k", "5x1xf32"}},
       R"(%0 = tcc.where %c, %a, %s : (tensor<3x1x16xi1>, tensor<3x5x16xf32>, tensor<f32>) -> tensor<3x5x16xf32>
  %r0 = tcc.mul %0, %k : (tensor<3x5x16xf32>, tensor<5x1xf32>) -> tensor<3x5x16xf32>)",
       {"3x5x16xf32"}},
      {"softmax_family",
       {{"x", "2x6x37xf32", -4, 4}, {"dy", "2x6x37xf32"}, {"mask", "6x37xf32"}},
       R"(%0 = tcc.add %x, %mask : (tensor<2x6x37xf32>, tensor<6x37xf32>) -> tensor<2x6x37xf32>
  %1 = tcc.softmax %0 {axis = 2 : i64} : tensor<2x6x37xf32>
  %2 = tcc.log_softmax %x {axis = 2 : i64} : tensor<2x6x37xf32>
  %3 = tcc.softmax_grad %dy, %1 {axis = 2 : i64} : tensor<2x6x37xf32>
  %4 = tcc.log_softmax_grad %dy, %2 {axis = 2 : i64} : tensor<2x6x37xf32>
  %r0 = tcc.add %3, %4 : (tensor<2x6x37xf32>, tensor<2x6x37xf32>) -> tensor<2x6x37xf32>
  %r1 = tcc.mul %1, %2 : (tensor<2x6x37xf32>, tensor<2x6x37xf32>) -> tensor<2x6x37xf32>)",
       {"2x6x37xf32", "2x6x37xf32"}},
      {"layer_norm",
       {{"x", "3x4x24xf32"},
        {"g", "24xf32"},
        {"b", "24xf32"},
        {"dy", "3x4x24xf32"}},
       R"(%y, %mean, %rstd = tcc.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<3x4x24xf32>, tensor<24xf32>, tensor<24xf32>) -> (tensor<3x4x24xf32>, tensor<3x4x1xf32>, tensor<3x4x1xf32>)
  %r0 = tcc.gelu %y {approximate = "none"} : tensor<3x4x24xf32>
  %r1, %r2, %r3 = tcc.layer_norm_grad %dy, %x, %g, %mean, %rstd {axis = 2 : i64} : (tensor<3x4x24xf32>, tensor<3x4x24xf32>, tensor<24xf32>, tensor<3x4x1xf32>, tensor<3x4x1xf32>) -> (tensor<3x4x24xf32>, tensor<24xf32>, tensor<24xf32>)
  %r4 = tcc.mul %rstd, %mean : (tensor<3x4x1xf32>, tensor<3x4x1xf32>) -> tensor<3x4x1xf32>)",
       {"3x4x24xf32", "3x4x24xf32", "24xf32", "24xf32", "3x4x1xf32"}},
      {"row_reductions",
       {{"x", "5x7x19xf32"}},
       R"(%0 = tcc.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : tensor<5x7x19xf32> -> tensor<5x7x1xf32>
  %1 = tcc.sub %x, %0 : (tensor<5x7x19xf32>, tensor<5x7x1xf32>) -> tensor<5x7x19xf32>
  %2 = tcc.mul %1, %1 : (tensor<5x7x19xf32>, tensor<5x7x19xf32>) -> tensor<5x7x19xf32>
  %r0 = tcc.reduce_sum %2 {axes = array<i64: 2>} : tensor<5x7x19xf32> -> tensor<5x7xf32>
  %r1 = tcc.exp %1 : tensor<5x7x19xf32>)",
       {"5x7xf32", "5x7x19xf32"}},
      {"cross_entropy",
       {{"l", "3x5x11xf32", -3, 3},
        {"bias", "11xf32"},
        {"labels", "3x5xi64", 0, 11}},
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.add %l, %bias : (tensor<3x5x11xf32>, tensor<11xf32>) -> tensor<3x5x11xf32>
  %r0 = tcc.softmax_cross_entropy %0, %labels : (tensor<3x5x11xf32>, tensor<3x5xi64>) -> tensor<f32>
  %r1 = tcc.softmax_cross_entropy_grad %one, %0, %labels : (tensor<f32>, tensor<3x5x11xf32>, tensor<3x5xi64>) -> tensor<3x5x11xf32>)",
       {"f32", "3x5x11xf32"}},
      // Rows labelled the ignore_index (3: a class, so the random labels
      // hit it) count for nothing; smoothing adds the rows' sums.
      {"cross_entropy_ignore_smoothing",
       {{"l", "3x5x11xf32", -3, 3},
        {"bias", "11xf32"},
        {"labels", "3x5xi64", 0, 4}},
       R"(%one = tcc.constant dense<0.25> : tensor<f32>
  %0 = tcc.add %l, %bias : (tensor<3x5x11xf32>, tensor<11xf32>) -> tensor<3x5x11xf32>
  %r0 = tcc.softmax_cross_entropy %0, %labels {ignore_index = 3 : i64, label_smoothing = 0.1 : f64} : (tensor<3x5x11xf32>, tensor<3x5xi64>) -> tensor<f32>
  %r1 = tcc.softmax_cross_entropy_grad %one, %0, %labels {ignore_index = 3 : i64, label_smoothing = 0.1 : f64} : (tensor<f32>, tensor<3x5x11xf32>, tensor<3x5xi64>) -> tensor<3x5x11xf32>)",
       {"f32", "3x5x11xf32"}},
      // Large enough to be split across threads.
      {"threaded",
       {{"x", "192x400xf32", -5, 5}, {"labels", "192xi64", 0, 400}},
       R"(%0 = tcc.softmax %x {axis = 1 : i64} : tensor<192x400xf32>
  %1 = tcc.gelu %x {approximate = "none"} : tensor<192x400xf32>
  %r0 = tcc.mul %0, %1 : (tensor<192x400xf32>, tensor<192x400xf32>) -> tensor<192x400xf32>
  %r1 = tcc.softmax_cross_entropy %1, %labels : (tensor<192x400xf32>, tensor<192xi64>) -> tensor<f32>)",
       {"192x400xf32", "f32"}},
      // Slices with zero starts are views of region inputs: a vocabulary
      // pad dropped, and every other row of a leading axis.
      {"slice_view_elementwise",
       {{"x", "3x5x40xf32"}, {"b", "36xf32"}, {"s", "6x10x40xf32"}},
       R"(%0 = tcc.slice %x {starts = array<i64: 0, 0, 0>, sizes = array<i64: 3, 5, 36>, steps = array<i64: 1, 1, 1>} : tensor<3x5x40xf32> -> tensor<3x5x36xf32>
  %1 = tcc.add %0, %b : (tensor<3x5x36xf32>, tensor<36xf32>) -> tensor<3x5x36xf32>
  %2 = tcc.slice %s {starts = array<i64: 0, 0, 0>, sizes = array<i64: 3, 5, 36>, steps = array<i64: 2, 2, 1>} : tensor<6x10x40xf32> -> tensor<3x5x36xf32>
  %3 = tcc.mul %1, %2 : (tensor<3x5x36xf32>, tensor<3x5x36xf32>) -> tensor<3x5x36xf32>
  %r0 = tcc.exp %3 : tensor<3x5x36xf32>)",
       {"3x5x36xf32"},
       /*minFused=*/1,
       /*padded=*/{},
       /*oneKernel=*/true},
      // The loss region of a padded vocabulary: logits read through the
      // slice, the gradient written padded.
      {"slice_view_ce_padded",
       {{"l", "3x5x48xf32", -3, 3},
        {"bias", "44xf32"},
        {"labels", "3x5xi64", 0, 44}},
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.slice %l {starts = array<i64: 0, 0, 0>, sizes = array<i64: 3, 5, 44>, steps = array<i64: 1, 1, 1>} : tensor<3x5x48xf32> -> tensor<3x5x44xf32>
  %1 = tcc.add %0, %bias : (tensor<3x5x44xf32>, tensor<44xf32>) -> tensor<3x5x44xf32>
  %r0 = tcc.softmax_cross_entropy %1, %labels : (tensor<3x5x44xf32>, tensor<3x5xi64>) -> tensor<f32>
  %2 = tcc.softmax_cross_entropy_grad %one, %1, %labels : (tensor<f32>, tensor<3x5x44xf32>, tensor<3x5xi64>) -> tensor<3x5x44xf32>
  %r1 = tcc.slice_grad %2 {shape = array<i64: 3, 5, 48>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<3x5x44xf32> -> tensor<3x5x48xf32>)",
       {"f32", "3x5x48xf32"},
       /*minFused=*/1,
       /*padded=*/{{1, 44}},
       /*oneKernel=*/true},
      // An element-wise value written padded (pad 12 of 20 columns) and
      // unpadded.
      {"padded_elementwise",
       {{"x", "4x6x20xf32"}},
       R"(%0 = tcc.tanh %x : tensor<4x6x20xf32>
  %r1 = tcc.mul %0, %x : (tensor<4x6x20xf32>, tensor<4x6x20xf32>) -> tensor<4x6x20xf32>
  %r0 = tcc.slice_grad %r1 {shape = array<i64: 4, 6, 32>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<4x6x20xf32> -> tensor<4x6x32xf32>)",
       {"4x6x32xf32", "4x6x20xf32"},
       /*minFused=*/1,
       /*padded=*/{{0, 20}},
       /*oneKernel=*/true},
      // A padded output that row reductions read back (from the output,
      // with the padded row stride), and a padded softmax.
      {"padded_rows_readback",
       {{"x", "5x70xf32"}, {"b", "70xf32"}},
       R"(%0 = tcc.add %x, %b : (tensor<5x70xf32>, tensor<70xf32>) -> tensor<5x70xf32>
  %r0 = tcc.slice_grad %0 {shape = array<i64: 5, 80>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<5x70xf32> -> tensor<5x80xf32>
  %1 = tcc.softmax %0 {axis = 1 : i64} : tensor<5x70xf32>
  %r1 = tcc.slice_grad %1 {shape = array<i64: 5, 80>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<5x70xf32> -> tensor<5x80xf32>
  %r2 = tcc.reduce_mean %0 {axes = array<i64: 1>, keepdims = true} : tensor<5x70xf32> -> tensor<5x1xf32>)",
       {"5x80xf32", "5x80xf32", "5x1xf32"},
       /*minFused=*/1,
       /*padded=*/{{0, 70}, {1, 70}},
       /*oneKernel=*/true},
      // Row reductions and the loss's pick read a strided slice of an
      // input directly (every other row, a pad dropped).
      {"slice_view_rows",
       {{"x", "6x4x40xf32", -3, 3}, {"labels", "3x4xi64", 0, 33}},
       R"(%0 = tcc.slice %x {starts = array<i64: 0, 0, 0>, sizes = array<i64: 3, 4, 33>, steps = array<i64: 2, 1, 1>} : tensor<6x4x40xf32> -> tensor<3x4x33xf32>
  %r0 = tcc.softmax %0 {axis = 2 : i64} : tensor<3x4x33xf32>
  %r1 = tcc.softmax_cross_entropy %0, %labels : (tensor<3x4x33xf32>, tensor<3x4xi64>) -> tensor<f32>)",
       {"3x4x33xf32", "f32"},
       /*minFused=*/1,
       /*padded=*/{},
       /*oneKernel=*/true},
      // The prelude's exp, erf and tanh over a wide range (checked
      // against libm below, not only against the reference kernels).
      {"special_functions",
       {{"x", "64x512xf32", -12, 12}},
       R"(%r0 = tcc.exp %x : tensor<64x512xf32>
  %r1 = tcc.erf %x : tensor<64x512xf32>
  %r2 = tcc.tanh %x : tensor<64x512xf32>)",
       {"64x512xf32", "64x512xf32", "64x512xf32"}},
  };
}

std::string tensorType(const std::string &t) { return "tensor<" + t + ">"; }

/// One function per case; argument and result names are prefixed with the
/// case name so every case is its own program in one artifact.
std::string moduleText(const std::vector<Case> &cs) {
  std::string s = "module {\n";
  for (const Case &c : cs) {
    s += "func.func @" + c.name + "(";
    for (size_t i = 0; i < c.args.size(); ++i)
      s += std::string(i ? ", " : "") + "%" + c.args[i].name + ": " +
           tensorType(c.args[i].type) +
           " {tcc.kind = \"input\", tcc.name = \"" + c.name + "." +
           c.args[i].name + "\"}";
    s += ") -> (";
    for (size_t i = 0; i < c.results.size(); ++i)
      s += std::string(i ? ", " : "") + tensorType(c.results[i]) +
           " {tcc.name = \"" + c.name + ".r" + std::to_string(i) + "\"}";
    s += ") {\n  " + c.body + "\n  return ";
    for (size_t i = 0; i < c.results.size(); ++i)
      s += std::string(i ? ", " : "") + "%r" + std::to_string(i);
    s += " : ";
    for (size_t i = 0; i < c.results.size(); ++i)
      s += std::string(i ? ", " : "") + tensorType(c.results[i]);
    s += "\n}\n";
  }
  return s + "}\n";
}

/// Lowers every case; with `fuse`, runs tcc-fuse and builds the host library.
rt::Artifact lowerAll(MLIRContext &ctx, bool fuse, std::string &source) {
  std::vector<Case> cs = cases();
  std::vector<std::string> names;
  for (const Case &c : cs)
    names.push_back(c.name);
  return ::tcc::test::lowerCases(
      ctx, moduleText(cs), names, fuse, &source, [&](ModuleOp module) {
        for (const Case &c : cs) {
          int n = 0;
          module.lookupSymbol<func::FuncOp>(c.name).walk(
              [&](mlir::tcc::FusedOp) { ++n; });
          EXPECT_GE(n, c.minFused) << c.name << ": expected fused regions";
        }
      });
}

/// Fills the inputs of every program from a fixed seed.
void fill(const rt::Artifact &a, rt::cpu::CpuSession &s) {
  std::vector<Case> cs = cases();
  std::mt19937 rng(7);
  for (const Case &c : cs)
    for (const Arg &arg : c.args) {
      std::string name = c.name + "." + arg.name;
      int32_t id = a.findTensor(name);
      ASSERT_GE(id, 0) << name;
      const rt::TensorInfo &t = a.tensors[id];
      if (t.dtype == rt::DType::F32) {
        std::uniform_real_distribution<float> d(arg.lo, arg.hi);
        float *p = static_cast<float *>(s.data(id));
        for (int64_t i = 0; i < t.numElements(); ++i)
          p[i] = d(rng);
      } else {
        bool isBool = arg.type.find("xi1") != std::string::npos;
        std::uniform_int_distribution<int64_t> d(
            0, isBool ? 1 : (int64_t)arg.hi - 1);
        int64_t *p = static_cast<int64_t *>(s.data(id));
        for (int64_t i = 0; i < t.numElements(); ++i)
          p[i] = d(rng);
      }
    }
}

std::vector<std::vector<float>> outputs(const rt::Artifact &a, rt::cpu::CpuSession &s,
                                        const std::string &program) {
  // NaN: an element a kernel does not write (a pad column) never matches.
  // (The first run allocates the program's arena, where its outputs live.)
  s.run(program);
  for (int32_t id : a.findProgram(program)->outputs)
    std::memset(s.data(id), 0xff, a.tensors[id].numElements() * sizeof(float));
  s.run(program);
  std::vector<std::vector<float>> out;
  for (int32_t id : a.findProgram(program)->outputs) {
    const float *p = static_cast<const float *>(s.data(id));
    out.emplace_back(p, p + a.tensors[id].numElements());
  }
  return out;
}

struct Fixture : ::testing::Test {
  static void SetUpTestSuite() {
    ctx = new MLIRContext();
    std::string unfusedSource; // empty: nothing is generated without fusion
    ref = new rt::Artifact(lowerAll(*ctx, false, unfusedSource));
    source = new std::string();
    fused = new rt::Artifact(lowerAll(*ctx, true, *source));
  }
  static void TearDownTestSuite() {
    delete ref;
    delete fused;
    delete source;
    delete ctx;
    rt::ThreadPool::setGlobalThreads(rt::ThreadPool::defaultThreads());
  }
  static MLIRContext *ctx;
  static rt::Artifact *ref, *fused;
  static std::string *source;
};
MLIRContext *Fixture::ctx;
rt::Artifact *Fixture::ref, *Fixture::fused;
std::string *Fixture::source;

TEST_F(Fixture, GeneratedKernelsMatchReferenceKernels) {
  ASSERT_GE(fused->hostLibOffset, 0);
  // The artifact (with its library) survives serialization.
  std::vector<uint8_t> bytes = rt::format::serialize(*fused);
  rt::Artifact back = rt::parseArtifact(bytes.data(), bytes.size(), "test");
  ASSERT_EQ(back.hostLibSize, fused->hostLibSize);
  rt::cpu::CpuSession r(*ref, rt::ExecMode::Compiled), f(back, rt::ExecMode::Compiled);
  fill(*ref, r);
  fill(back, f);
  for (const Case &c : cases()) {
    auto want = outputs(*ref, r, c.name), got = outputs(back, f, c.name);
    ASSERT_EQ(want.size(), got.size());
    for (size_t k = 0; k < want.size(); ++k) {
      float scale = 0;
      for (float v : want[k])
        scale = std::max(scale, std::fabs(v));
      for (size_t i = 0; i < want[k].size(); ++i) {
        float w = want[k][i], g = got[k][i];
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(g)) << c.name << " r" << k << "[" << i << "]";
          continue;
        }
        ASSERT_NEAR(g, w, 2e-6f * scale + 1e-5f * std::fabs(w))
            << c.name << " result " << k << " element " << i;
      }
    }
  }
}

TEST_F(Fixture, ThreadCountDoesNotChangeResults) {
  std::vector<std::vector<std::vector<float>>> runs;
  for (int threads : {1, 3}) {
    rt::ThreadPool::setGlobalThreads(threads);
    rt::cpu::CpuSession f(*fused, rt::ExecMode::Compiled);
    fill(*fused, f);
    std::vector<std::vector<float>> all;
    for (const Case &c : cases())
      for (auto &v : outputs(*fused, f, c.name))
        all.push_back(v);
    runs.push_back(all);
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (size_t k = 0; k < runs[0].size(); ++k)
    ASSERT_EQ(0, std::memcmp(runs[0][k].data(), runs[1][k].data(),
                             runs[0][k].size() * sizeof(float)))
        << "output " << k << " differs between 1 and 3 threads";
}

// Slices and pads at a region's edges leave no kernel of their own, and a
// padded output's pad columns are zeros (written over NaN).
TEST_F(Fixture, SliceViewsAndPaddedOutputs) {
  rt::cpu::CpuSession f(*fused, rt::ExecMode::Compiled);
  fill(*fused, f);
  int checked = 0;
  for (const Case &c : cases()) {
    if (!c.oneKernel)
      continue;
    SCOPED_TRACE(c.name);
    const rt::Program *p = fused->findProgram(c.name);
    ASSERT_TRUE(p);
    ASSERT_EQ(p->instrs.size(), 1u);
    EXPECT_EQ(p->instrs[0].kernel, "fused");
    auto out = outputs(*fused, f, c.name);
    for (auto [k, cols] : c.padded) {
      const rt::TensorInfo &t = fused->tensors[p->outputs[k]];
      int64_t stride = t.shape.back(), rows = t.numElements() / stride;
      ASSERT_GT(stride, cols);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = cols; j < stride; ++j) {
          uint32_t bits;
          std::memcpy(&bits, &out[k][r * stride + j], 4);
          ASSERT_EQ(bits, 0u) << "result " << k << " row " << r << " pad " << j;
          ++checked;
        }
    }
  }
  EXPECT_EQ(checked, 15 * 4 + 24 * 12 + 5 * 10 * 2);
}

TEST_F(Fixture, PreludeFunctionsAreAccurate) {
  rt::cpu::CpuSession f(*fused, rt::ExecMode::Compiled);
  fill(*fused, f);
  int32_t xid = fused->findTensor("special_functions.x");
  std::vector<float> x(static_cast<const float *>(f.data(xid)),
                       static_cast<const float *>(f.data(xid)) + 64 * 512);
  auto out = outputs(*fused, f, "special_functions");
  double worst[3] = {0, 0, 0};
  for (size_t i = 0; i < x.size(); ++i) {
    double xd = x[i];
    double want[3] = {std::exp(xd), std::erf(xd), std::tanh(xd)};
    for (int k = 0; k < 3; ++k) {
      if (k == 0 && want[0] < 1.2e-38) // flushed below FLT_MIN
        continue;
      if (want[k] == 0)
        continue;
      worst[k] = std::max(worst[k],
                          std::fabs(out[k][i] - want[k]) / std::fabs(want[k]));
    }
  }
  EXPECT_LT(worst[0], 3e-7) << "exp";
  EXPECT_LT(worst[1], 5e-7) << "erf";
  EXPECT_LT(worst[2], 5e-7) << "tanh";
}

// The losses' softmax: the generated tcc_exp_exact must be the runtime's
// fastExp bit for bit (KernelsLoss.cpp and the loss regions both use it, so
// a fused loss equals the library's), over the whole float range.
TEST(FusedPrelude, ExpExactIsTheRuntimesFastExp) {
  std::string src = std::string(::tcc::fusedPrelude()) +
                    "extern \"C\" void tcc_test_exp(const float *x, float *y, "
                    "long n) { for (long i = 0; i < n; ++i) y[i] = "
                    "tcc_exp_exact(x[i]); }\n";
  ::tcc::HostLibrary lib;
  std::string err;
  ASSERT_TRUE(::tcc::compileHostLibrary(src, lib, err)) << err;
  char path[] = "/tmp/tcc-prelude-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, lib.bytes.data(), lib.bytes.size()),
            static_cast<ssize_t>(lib.bytes.size()));
  close(fd);
  void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  unlink(path);
  ASSERT_TRUE(so) << dlerror();
  auto fn = reinterpret_cast<void (*)(const float *, float *, long)>(
      dlsym(so, "tcc_test_exp"));
  ASSERT_TRUE(fn);
  // Every 97th bit pattern (NaNs, infinities, subnormals, both signs), and
  // dense samples where the loss lives: [-100, 100].
  std::vector<float> x;
  for (uint64_t b = 0; b <= 0xffffffffull; b += 97)
    x.push_back(rt::floatFromBits(static_cast<uint32_t>(b)));
  for (int i = -2000000; i <= 2000000; ++i)
    x.push_back(static_cast<float>(i) * 5e-5f);
  std::vector<float> y(x.size());
  fn(x.data(), y.data(), static_cast<long>(x.size()));
  size_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    float want = rt::fastExp(x[i]);
    if (rt::floatBits(want) != rt::floatBits(y[i]) &&
        !(std::isnan(want) && std::isnan(y[i])))
      if (++differ <= 5)
        ADD_FAILURE() << "exp(" << x[i] << "): generated " << y[i]
                      << ", runtime " << want;
  }
  EXPECT_EQ(differ, 0u);
  dlclose(so);
}

TEST_F(Fixture, LabelOutOfRangeIsAnError) {
  rt::cpu::CpuSession f(*fused, rt::ExecMode::Compiled);
  fill(*fused, f);
  int32_t id = fused->findTensor("cross_entropy.labels");
  static_cast<int64_t *>(f.data(id))[7] = 11;
  try {
    f.run("cross_entropy");
    FAIL() << "expected an error";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("label 11 at position 7 is outside "
                                         "[0, 11)"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(Fixture, LibraryChecksOperandsAndIsa) {
  const uint8_t *lib = fused->blob.data() + fused->hostLibOffset;
  EXPECT_THROW(rt::FusedLibrary(lib, fused->hostLibSize, "x86-64-v9"),
               rt::Error);
  rt::FusedLibrary l(lib, fused->hostLibSize, fused->hostLibIsa);
  ASSERT_GT(l.size(), 0u);
  // An instr whose operand does not have the compiled element count.
  const rt::Program &p = *fused->findProgram("threaded");
  int refused = 0;
  for (const rt::Instr &in : p.instrs)
    if (in.kernel == "fused") {
      rt::Instr bad = in;
      std::vector<rt::TensorInfo> tensors = fused->tensors;
      tensors[bad.inputs[0]].shape = {7};
      EXPECT_THROW(l.check(bad, tensors), rt::Error);
      rt::abi::setAttrs(bad, rt::abi::FusedAttrs{(int64_t)l.size(), {}});
      EXPECT_THROW(l.check(bad, fused->tensors), rt::Error);
      // A pair in place that the kernel was not compiled for.
      int64_t k = rt::abi::attrs<rt::abi::KernelId::Fused>(in).kernel;
      for (size_t o = 0; o < in.outputs.size(); ++o)
        for (size_t i = 0; i < in.inputs.size(); ++i) {
          std::pair<int64_t, int64_t> pair{(int64_t)o, (int64_t)i};
          const auto &allowed = l.kernel(k).inPlace;
          if (std::find(allowed.begin(), allowed.end(), pair) != allowed.end())
            continue;
          bad = in;
          std::vector<int64_t> pairs{pair.first, pair.second};
          rt::abi::setAttrs(bad, rt::abi::FusedAttrs{k, pairs});
          try {
            l.check(bad, fused->tensors);
            ADD_FAILURE() << "pair accepted";
          } catch (const rt::Error &e) {
            EXPECT_NE(std::string(e.what()).find(
                          "was not compiled to run that pair in place"),
                      std::string::npos)
                << e.what();
          }
          ++refused;
        }
    }
  EXPECT_GT(refused, 0);
}

// A library whose kernel claims column sums without row slices (meta
// fields 8 and 9, see FusedLibrary.h's ABI) is refused at load, naming the
// kernel: the runtime would otherwise size and split its partials by a
// slice of 0 rows. The library is built here with the host compiler, as
// tcc compile builds real ones.
TEST(HostCompile, ColumnSumsWithoutSlicesAreRefused) {
  auto source = [](int colSums, int sliceRows) {
    return "#include <cstdint>\n"
           "extern \"C\" {\n"
           "typedef int (*Fn)(void *const *, int64_t, int64_t, float *, "
           "double *, int64_t *);\n"
           "typedef void (*Fin)(void *const *, const double *);\n"
           "static int k0(void *const *, int64_t, int64_t, float *, double *,"
           " int64_t *) { return 0; }\n"
           "extern const int64_t tcc_fused_abi = " +
           std::to_string(rt::kFusedAbi) +
           ";\n"
           "extern const int64_t tcc_fused_count = 1;\n"
           "extern const Fn tcc_fused_fns[1] = {k0};\n"
           "extern const Fin tcc_fused_fins[1] = {nullptr};\n"
           "extern const int64_t tcc_fused_meta_offsets[2] = {0, 14};\n"
           "extern const int64_t tcc_fused_meta[14] = {4, 8, 1, 1, 0, 0, 1, "
           "0, " +
           std::to_string(colSums) + ", " + std::to_string(sliceRows) +
           ", 0, 32, 0, 8};\n"
           "extern const char *const tcc_fused_names[1] = {\"sum\"};\n"
           "}\n";
  };
  ::tcc::HostLibrary good, bad;
  std::string err;
  ASSERT_TRUE(::tcc::compileHostLibrary(source(1, 2), good, err)) << err;
  ASSERT_TRUE(::tcc::compileHostLibrary(source(1, 0), bad, err)) << err;
  rt::FusedLibrary l(good.bytes.data(), good.bytes.size(), good.isa);
  EXPECT_EQ(l.kernel(0).partialCount(), 2 * 1 * 8);
  try {
    rt::FusedLibrary(bad.bytes.data(), bad.bytes.size(), bad.isa);
    ADD_FAILURE() << "a column sum over slices of 0 rows was loaded";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "generated kernel 0 has 1 column sums over slices of 0 rows"),
              std::string::npos)
        << e.what();
  }
}

TEST(HostCompile, BrokenCompilerIsReported) {
  ::setenv("TCC_HOST_CXX", "/bin/false", 1);
  ::tcc::HostLibrary lib;
  std::string err;
  EXPECT_FALSE(::tcc::compileHostLibrary("int x;", lib, err));
  ::unsetenv("TCC_HOST_CXX");
  EXPECT_NE(err.find("failed to build the fused kernels"), std::string::npos)
      << err;
}

} // namespace

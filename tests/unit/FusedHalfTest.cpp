//===- FusedHalfTest.cpp - bf16/f16 regions vs the library kernels --------===//
//
// Functions of bf16/f16 element-wise ops and float casts are lowered twice:
// as is (one library kernel per op, 16-bit operands through the half
// adapter of runtime/cpu/KernelsHalf.cpp) and after tcc-fuse (generated
// kernels). The outputs must be the same bytes: each 16-bit value of a
// region is rounded where the unfused kernel stores it, and an op with a
// 16-bit result computes with libm's functions as the kernel does. The
// inputs hit the corner cases of the conversions: exact ties, values that
// overflow f16 (and bf16) to Inf, f16 subnormals, NaN payloads, -0, and
// raw 16-bit words of every class. Regions with row ops (f32 inside, casts
// around) are checked to one 16-bit ulp, since their f32 part uses the
// fast exp of f32 regions.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuSession.h"
#include "runtime/cpu/FusedLibrary.h"
#include "runtime/core/prelude/Half.h"
#include "runtime/core/ThreadPool.h"
#include "tests/unit/FusedTestModule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace mlir;
namespace rt = ::tcc::rt;

namespace {

struct Case {
  std::string name;
  std::vector<std::pair<std::string, std::string>> args; // name, type
  std::vector<std::string> results;                      // types
  std::string body;                                      // ends with its return
  bool exact = true;     // bit for bit; else within one 16-bit ulp
  bool positive = false; // inputs without their sign (logs, powers)
  bool allWords = false; // 16-bit input element i is the word i % 65536
  /// 16-bit inputs are rounded moderate values only (a loss row with an Inf
  /// or NaN anywhere is NaN throughout: a vacuous comparison).
  bool finite = false;
};

/// Every unary function and gradient of a 16-bit type over all 65536 words:
/// the fast f32 functions would round differently for ~100 of them.
Case allWords(const std::string &t) {
  std::string T = "tensor<256x256x" + t + ">", un = " : " + T + "\n  ";
  std::string body;
  const char *unary[] = {"exp", "erf", "tanh", "sigmoid", "sqrt", "log"};
  int k = 0;
  for (const char *f : unary)
    body += "%r" + std::to_string(k++) + " = tcc." + f + " %x" + un;
  for (const char *a : {"none", "tanh"}) {
    body += "%r" + std::to_string(k++) + " = tcc.gelu %x {approximate = \"" +
            a + "\"}" + un;
    body += "%r" + std::to_string(k++) + " = tcc.gelu_grad %x, %x " +
            "{approximate = \"" + a + "\"}" + un;
  }
  for (const char *g : {"erf_grad", "tanh_grad", "sigmoid_grad"})
    body += "%r" + std::to_string(k++) + " = tcc." + g + " %x, %x" + un;
  body += "%r" + std::to_string(k++) +
          " = tcc.pow_scalar %x {exponent = 1.5 : f64}" + un;
  std::string ret = "return ", types;
  for (int i = 0; i < k; ++i) {
    ret += std::string(i ? ", " : "") + "%r" + std::to_string(i);
    types += std::string(i ? ", " : "") + T;
  }
  Case c{"all_" + t, {{"x", "256x256x" + t}}, {}, body + ret + " : " + types};
  c.results.assign(k, "256x256x" + t);
  c.allWords = true;
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> all = {
      // A bf16 chain with casts up and down around an f32 add.
      {"bf16_chain",
       {{"x", "4x8x33xbf16"},
        {"b", "33xbf16"},
        {"y", "4x8x33xf32"},
        {"m", "4x1x33xbf16"}},
       {"4x8x33xbf16", "4x8x33xbf16", "4x8x33xf32"},
       R"(%c = tcc.constant dense<0.3> : tensor<bf16>
  %0 = tcc.add %x, %b : (tensor<4x8x33xbf16>, tensor<33xbf16>) -> tensor<4x8x33xbf16>
  %1 = tcc.gelu %0 {approximate = "none"} : tensor<4x8x33xbf16>
  %2 = tcc.mul %1, %c : (tensor<4x8x33xbf16>, tensor<bf16>) -> tensor<4x8x33xbf16>
  %3 = tcc.cast %2 : tensor<4x8x33xbf16> -> tensor<4x8x33xf32>
  %4 = tcc.add %3, %y : (tensor<4x8x33xf32>, tensor<4x8x33xf32>) -> tensor<4x8x33xf32>
  %5 = tcc.cast %4 : tensor<4x8x33xf32> -> tensor<4x8x33xbf16>
  %6 = tcc.tanh %5 : tensor<4x8x33xbf16>
  %7 = tcc.sigmoid %6 : tensor<4x8x33xbf16>
  %8 = tcc.sub %7, %m : (tensor<4x8x33xbf16>, tensor<4x1x33xbf16>) -> tensor<4x8x33xbf16>
  %9 = tcc.erf %8 : tensor<4x8x33xbf16>
  %r0 = tcc.exp %9 : tensor<4x8x33xbf16>
  %r1 = tcc.gelu_grad %x, %0 {approximate = "none"} : tensor<4x8x33xbf16>
  return %r0, %r1, %4 : tensor<4x8x33xbf16>, tensor<4x8x33xbf16>, tensor<4x8x33xf32>)"},
      // f16: overflow to Inf (x * 300), subnormals (x * 2^-12), every
      // element-wise op and gradient with a 16-bit result.
      {"f16_math",
       {{"x", "6x40xf16"}, {"y", "6x40xf16"}, {"k", "6x1xi1"}},
       {"6x40xf16", "6x40xf16", "6x40xf16", "6x40xf16", "6x40xf16"},
       R"(%big = tcc.constant dense<300.0> : tensor<f16>
  %tiny = tcc.constant dense<2.44140625e-04> : tensor<f16>
  %0 = tcc.mul %x, %big : (tensor<6x40xf16>, tensor<f16>) -> tensor<6x40xf16>
  %1 = tcc.mul %y, %tiny : (tensor<6x40xf16>, tensor<f16>) -> tensor<6x40xf16>
  %2 = tcc.div %0, %y : (tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  %3 = tcc.sub %1, %x : (tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  %4 = tcc.neg %3 : tensor<6x40xf16>
  %5 = tcc.relu %2 : tensor<6x40xf16>
  %6 = tcc.relu_grad %4, %y : tensor<6x40xf16>
  %7 = tcc.sqrt %x : tensor<6x40xf16>
  %8 = tcc.log %y : tensor<6x40xf16>
  %9 = tcc.pow_scalar %x {exponent = 3.7 : f64} : tensor<6x40xf16>
  %10 = tcc.pow_scalar_grad %y, %x {exponent = -0.5 : f64} : tensor<6x40xf16>
  %11 = tcc.pow %x, %y : (tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  %12 = tcc.gelu %x {approximate = "tanh"} : tensor<6x40xf16>
  %13 = tcc.gelu_grad %y, %x {approximate = "tanh"} : tensor<6x40xf16>
  %14 = tcc.tanh_grad %y, %x : tensor<6x40xf16>
  %15 = tcc.sigmoid_grad %y, %x : tensor<6x40xf16>
  %16 = tcc.erf_grad %y, %x : tensor<6x40xf16>
  %17 = tcc.sqrt_grad %y, %7 : tensor<6x40xf16>
  %18 = tcc.where %k, %5, %6 : (tensor<6x1xi1>, tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  %19 = tcc.add %8, %9 : (tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  %20 = tcc.mul %10, %11 : (tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  %21 = tcc.sub %12, %13 : (tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  %22 = tcc.add %14, %15 : (tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  %23 = tcc.add %16, %17 : (tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  %24 = tcc.mul %22, %23 : (tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  return %18, %19, %20, %21, %24 : tensor<6x40xf16>, tensor<6x40xf16>, tensor<6x40xf16>, tensor<6x40xf16>, tensor<6x40xf16>)",
       /*exact=*/true,
       /*positive=*/true},
      // Every float cast: f32 -> bf16/f16 (ties, overflow, subnormals,
      // NaN payloads), bf16 <-> f16, and back up.
      {"casts",
       {{"x", "8x64xf32"}},
       {"8x64xbf16", "8x64xf16", "8x64xf16", "8x64xbf16", "8x64xf32"},
       R"(%b = tcc.cast %x : tensor<8x64xf32> -> tensor<8x64xbf16>
  %h = tcc.cast %x : tensor<8x64xf32> -> tensor<8x64xf16>
  %bh = tcc.cast %b : tensor<8x64xbf16> -> tensor<8x64xf16>
  %hb = tcc.cast %h : tensor<8x64xf16> -> tensor<8x64xbf16>
  %bf = tcc.cast %b : tensor<8x64xbf16> -> tensor<8x64xf32>
  %hf = tcc.cast %hb : tensor<8x64xbf16> -> tensor<8x64xf32>
  %s = tcc.sub %bf, %hf : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return %b, %h, %bh, %hb, %s : tensor<8x64xbf16>, tensor<8x64xf16>, tensor<8x64xf16>, tensor<8x64xbf16>, tensor<8x64xf32>)"},
      // Large enough to be split across threads.
      {"threaded",
       {{"x", "160x512xbf16"}, {"b", "512xbf16"}},
       {"160x512xbf16"},
       R"(%0 = tcc.add %x, %b : (tensor<160x512xbf16>, tensor<512xbf16>) -> tensor<160x512xbf16>
  %1 = tcc.gelu %0 {approximate = "none"} : tensor<160x512xbf16>
  %2 = tcc.gelu_grad %x, %1 {approximate = "none"} : tensor<160x512xbf16>
  %r = tcc.mul %2, %0 : (tensor<160x512xbf16>, tensor<160x512xbf16>) -> tensor<160x512xbf16>
  return %r : tensor<160x512xbf16>)"},
      // Mixed precision's shapes: a residual add in bf16, cast up, layer
      // norm in f32, cast down; a masked softmax between casts; the bf16
      // sum read again after the row mean (from floats kept in scratch).
      {"rows",
       {{"x", "4x6x48xbf16"},
        {"r", "4x6x48xbf16"},
        {"g", "48xf32"},
        {"be", "48xf32"},
        {"mask", "6x48xbf16"}},
       {"4x6x48xbf16", "4x6x48xbf16", "4x6x48xbf16", "4x6x48xbf16"},
       R"(%0 = tcc.add %x, %r : (tensor<4x6x48xbf16>, tensor<4x6x48xbf16>) -> tensor<4x6x48xbf16>
  %1 = tcc.cast %0 : tensor<4x6x48xbf16> -> tensor<4x6x48xf32>
  %y, %mean, %rstd = tcc.layer_norm %1, %g, %be {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x6x48xf32>, tensor<48xf32>, tensor<48xf32>) -> (tensor<4x6x48xf32>, tensor<4x6x1xf32>, tensor<4x6x1xf32>)
  %2 = tcc.cast %y : tensor<4x6x48xf32> -> tensor<4x6x48xbf16>
  %3 = tcc.add %x, %mask : (tensor<4x6x48xbf16>, tensor<6x48xbf16>) -> tensor<4x6x48xbf16>
  %4 = tcc.cast %3 : tensor<4x6x48xbf16> -> tensor<4x6x48xf32>
  %5 = tcc.softmax %4 {axis = 2 : i64} : tensor<4x6x48xf32>
  %6 = tcc.cast %5 : tensor<4x6x48xf32> -> tensor<4x6x48xbf16>
  %7 = tcc.cast %mean : tensor<4x6x1xf32> -> tensor<4x6x1xbf16>
  %8 = tcc.sub %0, %7 : (tensor<4x6x48xbf16>, tensor<4x6x1xbf16>) -> tensor<4x6x48xbf16>
  return %0, %2, %6, %8 : tensor<4x6x48xbf16>, tensor<4x6x48xbf16>, tensor<4x6x48xbf16>, tensor<4x6x48xbf16>)",
       /*exact=*/false},
      // A slice of a vocabulary-padded input read as a view, the result
      // zero-padded again as the region's output: the same bytes as the
      // slice and slice_grad kernels around an unfused chain, pad zeros
      // included (the outputs are NaN before the run).
      {"bf16_slice_padded",
       {{"x", "4x6x40xbf16"}, {"b", "36xbf16"}},
       {"4x6x40xbf16", "4x6x36xbf16"},
       R"(%0 = tcc.slice %x {starts = array<i64: 0, 0, 0>, sizes = array<i64: 4, 6, 36>, steps = array<i64: 1, 1, 1>} : tensor<4x6x40xbf16> -> tensor<4x6x36xbf16>
  %1 = tcc.add %0, %b : (tensor<4x6x36xbf16>, tensor<36xbf16>) -> tensor<4x6x36xbf16>
  %2 = tcc.gelu %1 {approximate = "none"} : tensor<4x6x36xbf16>
  %3 = tcc.slice_grad %2 {shape = array<i64: 4, 6, 40>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<4x6x36xbf16> -> tensor<4x6x40xbf16>
  return %3, %1 : tensor<4x6x40xbf16>, tensor<4x6x36xbf16>)"},
      // The mixed-precision loss region of a padded vocabulary (after the
      // cast moved ahead of the pad): the bf16 logits through the slice,
      // the loss, and the bf16 gradient padded, as the library kernels
      // compute them.
      {"bf16_loss_padded",
       {{"l", "3x5x48xbf16"}, {"labels", "3x5xi64"}},
       {"f32", "3x5x48xbf16"},
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.slice %l {starts = array<i64: 0, 0, 0>, sizes = array<i64: 3, 5, 44>, steps = array<i64: 1, 1, 1>} : tensor<3x5x48xbf16> -> tensor<3x5x44xbf16>
  %1 = tcc.cast %0 : tensor<3x5x44xbf16> -> tensor<3x5x44xf32>
  %2 = tcc.softmax_cross_entropy %1, %labels : (tensor<3x5x44xf32>, tensor<3x5xi64>) -> tensor<f32>
  %3 = tcc.softmax_cross_entropy_grad %one, %1, %labels : (tensor<f32>, tensor<3x5x44xf32>, tensor<3x5xi64>) -> tensor<3x5x44xf32>
  %4 = tcc.cast %3 : tensor<3x5x44xf32> -> tensor<3x5x44xbf16>
  %5 = tcc.slice_grad %4 {shape = array<i64: 3, 5, 48>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<3x5x44xbf16> -> tensor<3x5x48xbf16>
  return %2, %5 : tensor<f32>, tensor<3x5x48xbf16>)"},
  };
  all.back().finite = true;
  all.push_back(allWords("bf16"));
  all.push_back(allWords("f16"));
  return all;
}

/// One function per case; arguments are inputs named "<case>.<arg>".
std::string moduleText() {
  std::string s = "module {\n";
  for (const Case &c : cases()) {
    s += "func.func @" + c.name + "(";
    for (size_t i = 0; i < c.args.size(); ++i)
      s += std::string(i ? ", " : "") + "%" + c.args[i].first + ": tensor<" +
           c.args[i].second + "> {tcc.kind = \"input\", tcc.name = \"" +
           c.name + "." + c.args[i].first + "\"}";
    s += ") -> (";
    for (size_t i = 0; i < c.results.size(); ++i)
      s += std::string(i ? ", " : "") + "tensor<" + c.results[i] + ">";
    s += ") {\n  " + c.body + "\n}\n";
  }
  return s + "}\n";
}

/// Lowers every case; with `fuse`, runs tcc-fuse and builds the library.
rt::Artifact lowerAll(MLIRContext &ctx, bool fuse) {
  std::vector<std::string> names;
  for (const Case &c : cases())
    names.push_back(c.name);
  return ::tcc::test::lowerCases(ctx, moduleText(), names, fuse);
}

/// f32 values at the conversions' edges, else uniform in [-4, 4].
float edgeF32(std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::uniform_int_distribution<uint32_t> word(0, 0xffffu);
  float sign = rng() & 1 ? -1.0f : 1.0f;
  switch (rng() % 12) {
  case 0: // a bf16 tie: the discarded half is exactly 0x8000
    return rt::floatFromBits((rt::floatBits(u(rng)) & 0xffff0000u) | 0x8000u);
  case 1: { // an f16 tie: halfway between two neighbours
    uint16_t h = static_cast<uint16_t>(word(rng) & 0x7bfeu);
    return sign * 0.5f * (rt::f16ToF32(h) + rt::f16ToF32(h + 1));
  }
  case 2: // around f16's largest value (65504; 65520 is the tie to Inf)
    return sign * (65504.0f + 8.0f * (float)(rng() % 5));
  case 3: // f16 subnormals and the ties between them
    return sign * 0x1.0p-25f * (float)(rng() % 64);
  case 4: // beyond bf16's largest finite value
    return sign * rt::floatFromBits(0x7f7f8000u + (rng() % 0x8000u));
  case 5: { // NaN with a payload, quiet or signaling
    uint32_t payload = 1 + rng() % 0x3fffffu;
    return rt::floatFromBits((rng() & 1 ? 0xff800000u : 0x7f800000u) |
                             (rng() & 1 ? 0x400000u : 0u) | payload);
  }
  case 6:
    return sign * INFINITY;
  case 7:
    return sign * 0.0f;
  default:
    return u(rng);
  }
}

/// A 16-bit word: a raw pattern (any class) or a rounded moderate value.
uint16_t edgeWord(std::mt19937 &rng, rt::DType t) {
  if (rng() % 3 == 0)
    return static_cast<uint16_t>(rng());
  float f = edgeF32(rng);
  return t == rt::DType::BF16 ? rt::f32ToBf16(f) : rt::f32ToF16(f);
}

void fill(const rt::Artifact &a, rt::cpu::CpuSession &s) {
  std::mt19937 rng(2024);
  for (const Case &c : cases())
    for (const rt::Program &p : a.programs) {
      if (p.name != c.name)
        continue;
      for (int32_t id : p.inputs) {
        const rt::TensorInfo &t = a.tensors[id];
        void *d = s.data(id);
        for (int64_t i = 0; i < t.numElements(); ++i) {
          if (t.dtype == rt::DType::F32)
            static_cast<float *>(d)[i] = edgeF32(rng);
          else if (t.dtype == rt::DType::I64)
            static_cast<int64_t *>(d)[i] = rng() & 1;
          else if (c.allWords)
            static_cast<uint16_t *>(d)[i] = static_cast<uint16_t>(i);
          else if (c.finite)
            static_cast<uint16_t *>(d)[i] = rt::f32ToBf16(
                std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng));
          else
            static_cast<uint16_t *>(d)[i] =
                edgeWord(rng, t.dtype) & (c.positive ? 0x7fffu : 0xffffu);
        }
      }
    }
}

/// An output value as f32 (16-bit words widened).
float valueAt(const rt::TensorInfo &t, const uint8_t *p, int64_t i) {
  if (t.dtype == rt::DType::F32)
    return reinterpret_cast<const float *>(p)[i];
  uint16_t h = reinterpret_cast<const uint16_t *>(p)[i];
  return t.dtype == rt::DType::BF16 ? rt::bf16ToF32(h) : rt::f16ToF32(h);
}

struct FusedHalf : ::testing::Test {
  static void SetUpTestSuite() {
    ctx = new MLIRContext();
    ref = new rt::Artifact(lowerAll(*ctx, false));
    fused = new rt::Artifact(lowerAll(*ctx, true));
  }
  static void TearDownTestSuite() {
    delete ref;
    delete fused;
    delete ctx;
    rt::ThreadPool::setGlobalThreads(rt::ThreadPool::defaultThreads());
  }
  static MLIRContext *ctx;
  static rt::Artifact *ref, *fused;
};
MLIRContext *FusedHalf::ctx;
rt::Artifact *FusedHalf::ref, *FusedHalf::fused;

TEST_F(FusedHalf, EveryOpJoinsARegion) {
  // Nothing of the element-wise chains is left to a library kernel.
  for (const Case &c : cases()) {
    const rt::Program *p = fused->findProgram(c.name);
    ASSERT_TRUE(p) << c.name;
    int regions = 0;
    for (const rt::Instr &in : p->instrs) {
      regions += in.kernel == "fused";
      EXPECT_TRUE(in.kernel == "fused" || in.kernel == "copy")
          << c.name << ": " << in.kernel << " was not fused";
    }
    EXPECT_GE(regions, 1) << c.name;
  }
}

TEST_F(FusedHalf, RegionsMatchTheLibraryKernels) {
  ASSERT_GE(fused->hostLibOffset, 0);
  rt::ThreadPool::setGlobalThreads(3);
  rt::cpu::CpuSession r(*ref, rt::ExecMode::Compiled),
      f(*fused, rt::ExecMode::Compiled);
  fill(*ref, r);
  fill(*fused, f);
  for (const Case &c : cases()) {
    r.run(c.name);
    // The first run allocates the arena; then every output is 0xff words
    // (NaN), so an element the regions do not write (a pad) never matches.
    f.run(c.name);
    for (int32_t id : fused->findProgram(c.name)->outputs)
      std::memset(f.data(id), 0xff,
                  fused->tensors[id].numElements() *
                      rt::dtypeSize(fused->tensors[id].dtype));
    f.run(c.name);
    const auto &outs = ref->findProgram(c.name)->outputs;
    const auto &fouts = fused->findProgram(c.name)->outputs;
    ASSERT_EQ(outs.size(), fouts.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      const rt::TensorInfo &t = ref->tensors[outs[k]];
      ASSERT_EQ(t.dtype, fused->tensors[fouts[k]].dtype);
      auto *want = static_cast<const uint8_t *>(r.data(outs[k]));
      auto *got = static_cast<const uint8_t *>(f.data(fouts[k]));
      SCOPED_TRACE(c.name + " result " + std::to_string(k) + " (" +
                   rt::dtypeName(t.dtype) + ")");
      if (c.exact) {
        // The same bits, except that which NaN comes out is not: x86
        // passes on the first operand's NaN, and compilers swap the
        // operands of commutative operations (in the library too).
        int64_t nans = 0;
        for (int64_t i = 0; i < t.numElements(); ++i) {
          size_t w = rt::dtypeSize(t.dtype);
          float wv = valueAt(t, want, i), gv = valueAt(t, got, i);
          if (std::isnan(wv) && std::isnan(gv)) {
            ++nans;
            continue;
          }
          ASSERT_EQ(0, std::memcmp(want + i * w, got + i * w, w))
              << "element " << i << ": want " << wv << ", got " << gv;
        }
        if (!c.allWords) { // there, half the words are negative or NaN
          EXPECT_LT(2 * nans, t.numElements()) << "mostly NaN: a weak check";
        }
        EXPECT_FALSE(HasFatalFailure());
        continue;
      }
      for (int64_t i = 0; i < t.numElements(); ++i) {
        float w = valueAt(t, want, i), g = valueAt(t, got, i);
        if (std::isnan(w) || std::isnan(g)) {
          EXPECT_TRUE(std::isnan(w) && std::isnan(g)) << "element " << i;
          continue;
        }
        if (std::isinf(w) || std::isinf(g)) {
          EXPECT_EQ(w, g) << "element " << i;
          continue;
        }
        // One ulp of the 16-bit type at w's magnitude.
        int e = std::ilogb(std::max(std::fabs(w), 1e-30f));
        float ulp = std::ldexp(1.0f, e - (t.dtype == rt::DType::F16 ? 10 : 7));
        ASSERT_LE(std::fabs(g - w), ulp) << "element " << i;
      }
    }
  }
}

// The library's signature table has the 16-bit dtypes: an operand of the
// right element count but another float type (twice the bytes for f32) is
// refused before any kernel runs.
TEST_F(FusedHalf, LibraryChecksSixteenBitOperands) {
  const uint8_t *lib = fused->blob.data() + fused->hostLibOffset;
  rt::FusedLibrary l(lib, fused->hostLibSize, fused->hostLibIsa);
  int checked = 0;
  for (const rt::Instr &in : fused->findProgram("bf16_chain")->instrs) {
    if (in.kernel != "fused")
      continue;
    l.check(in, fused->tensors); // as compiled
    for (rt::DType wrong : {rt::DType::F32, rt::DType::F16}) {
      std::vector<rt::TensorInfo> tensors = fused->tensors;
      tensors[in.inputs[0]].dtype = wrong;
      try {
        l.check(in, tensors);
        ADD_FAILURE() << "a " << rt::dtypeName(wrong) << " input passed";
      } catch (const rt::Error &e) {
        EXPECT_NE(std::string(e.what()).find("was compiled for bf16"),
                  std::string::npos)
            << e.what();
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2);
}

} // namespace

//===- KernelsHalfTest.cpp - bf16/f16 conversions and kernels -------------===//
//
// The conversions against PyTorch's bit patterns and against independent
// references (exhaustive over the 16-bit values, and over random and tie
// f32 values); the kernels on 16-bit operands against the f32 kernels on the
// widened values (bit for bit after one rounding) and against f32
// references within the 16-bit formats' precision.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuSession.h"
#include "runtime/core/prelude/Half.h"
#include "runtime/cpu/Kernels.h"
#include "tests/unit/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace tcc::rt;

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

// f32 bits -> torch.bfloat16 bits, torch.float16 bits (PyTorch 1.13, CPU).
static const struct {
  uint32_t f32;
  uint16_t bf16, f16;
} kTorchConversions[] = {
    {0x00000000u, 0x0000, 0x0000}, {0x80000000u, 0x8000, 0x8000},
    {0x3f800000u, 0x3f80, 0x3c00}, {0xbf800000u, 0xbf80, 0xbc00},
    {0x7f800000u, 0x7f80, 0x7c00}, {0xff800000u, 0xff80, 0xfc00},
    {0x3f808000u, 0x3f80, 0x3c04}, {0x3f818000u, 0x3f82, 0x3c0c},
    {0x3f808001u, 0x3f81, 0x3c04}, {0x3f807fffu, 0x3f80, 0x3c04},
    {0x7f7fffffu, 0x7f80, 0x7c00}, {0x7f7f8000u, 0x7f80, 0x7c00},
    {0x477fe000u, 0x4780, 0x7bff}, {0x477fefffu, 0x4780, 0x7bff},
    {0x477ff000u, 0x4780, 0x7c00}, {0x477ff001u, 0x4780, 0x7c00},
    {0x47800000u, 0x4780, 0x7c00}, {0x33800000u, 0x3380, 0x0001},
    {0x33000000u, 0x3300, 0x0000}, {0x33000001u, 0x3300, 0x0001},
    {0x33c00000u, 0x33c0, 0x0002}, {0x387fc000u, 0x3880, 0x03ff},
    {0x38800000u, 0x3880, 0x0400}, {0x00000001u, 0x0000, 0x0000},
    {0x807fffffu, 0x8080, 0x8000}, {0x3fffffffu, 0x4000, 0x4000},
    {0x3f7ff000u, 0x3f80, 0x3c00}, {0x3f7ff001u, 0x3f80, 0x3c00},
    {0x3f801000u, 0x3f80, 0x3c00}, {0x3f803000u, 0x3f80, 0x3c02},
    {0x3f802000u, 0x3f80, 0x3c01}, {0xc77fe000u, 0xc780, 0xfbff},
    {0x40490fdbu, 0x4049, 0x4248}, {0x2265b1f5u, 0x2266, 0x0000},
    {0x91b7584au, 0x91b7, 0x8000}, {0xd8f16adfu, 0xd8f1, 0xfc00},
    {0xcd613e30u, 0xcd61, 0xfc00}, {0xc386bbc4u, 0xc387, 0xdc36},
    {0x1027c4d1u, 0x1028, 0x0000}, {0x414c343cu, 0x414c, 0x4a62},
    {0x1e2feb89u, 0x1e30, 0x0000}, {0x7ed4d57bu, 0x7ed5, 0x7c00},
    {0xc2ce6f44u, 0xc2ce, 0xd673}, {0x7311d8a3u, 0x7312, 0x7c00},
    {0x78e51061u, 0x78e5, 0x7c00}, {0xa6cecc1bu, 0xa6cf, 0x8000},
    {0x612e7696u, 0x612e, 0x7c00},
};

TEST(Half, MatchesTorchBitPatterns) {
  for (const auto &c : kTorchConversions) {
    float f = floatFromBits(c.f32);
    EXPECT_EQ(f32ToBf16(f), c.bf16) << std::hex << c.f32;
    EXPECT_EQ(f32ToF16(f), c.f16) << std::hex << c.f32;
  }
}

TEST(Half, NaNStaysNaN) {
  for (uint32_t bits : {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fffffffu}) {
    float f = floatFromBits(bits);
    EXPECT_TRUE(std::isnan(bf16ToF32(f32ToBf16(f)))) << std::hex << bits;
    EXPECT_TRUE(std::isnan(f16ToF32(f32ToF16(f)))) << std::hex << bits;
    // The sign survives (PyTorch keeps it for f16).
    EXPECT_EQ(f32ToF16(f) >> 15, bits >> 31);
  }
}

/// f16 value of `h` from its fields, in double.
static double f16Reference(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0)
    v = std::ldexp(m, -24);
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = std::ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

TEST(Half, F16ToF32ExhaustiveAndRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16ToF32(static_cast<uint16_t>(h));
    double want = f16Reference(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), want) << std::hex << h;
    ASSERT_EQ(std::signbit(f), (h >> 15) != 0) << std::hex << h;
    ASSERT_EQ(f32ToF16(f), h) << std::hex << h;
  }
}

TEST(Half, Bf16ToF32ExhaustiveAndRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = bf16ToF32(static_cast<uint16_t>(h));
    ASSERT_EQ(floatBits(f), h << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(f32ToBf16(f), h) << std::hex << h;
    }
  }
}

/// Rounds `x` to a float format with `mant` explicit mantissa bits, minimum
/// normal exponent `emin` and largest finite value `max`, ties to even, in
/// double (exact for these formats): the textbook definition.
static double roundReference(float x, int mant, int emin, double max) {
  double v = x;
  if (v == 0 || std::isinf(v))
    return v;
  int e = std::max(static_cast<int>(std::floor(std::log2(std::fabs(v)))), emin);
  double ulp = std::ldexp(1.0, e - mant);
  double r = std::nearbyint(v / ulp) * ulp; // default mode: ties to even
  if (std::fabs(r) > max)
    return v < 0 ? -INFINITY : INFINITY;
  return r;
}

TEST(Half, RoundingMatchesReferenceOnRandomAndTieValues) {
  std::mt19937 rng(7);
  std::vector<float> xs;
  for (int i = 0; i < 200000; ++i) {
    // Random bits, biased towards f16's range so that both paths are hit.
    uint32_t bits = rng();
    if (i % 2)
      bits = (bits & 0x807fffffu) | ((100 + rng() % 50) << 23);
    float f = floatFromBits(bits);
    if (!std::isnan(f))
      xs.push_back(f);
  }
  // Exact midpoints between neighbouring 16-bit values: ties to even.
  for (uint32_t h = 0; h < 0x7bff; h += 7) {
    double lo = f16Reference(h), hi = f16Reference(h + 1);
    xs.push_back(static_cast<float>((lo + hi) / 2));
  }
  for (uint32_t h = 0; h < 0x7f7f; h += 5)
    xs.push_back(floatFromBits((h << 16) | 0x8000u));
  for (float x : xs) {
    double wantF16 = roundReference(x, 10, -14, 65504.0);
    double wantBf16 = roundReference(x, 7, -126, 3.3895313892515355e38);
    float gotF16 = f16ToF32(f32ToF16(x)), gotBf16 = bf16ToF32(f32ToBf16(x));
    ASSERT_EQ(static_cast<double>(gotF16), wantF16) << std::hexfloat << x;
    ASSERT_EQ(static_cast<double>(gotBf16), wantBf16) << std::hexfloat << x;
    if (gotF16 == 0) {
      ASSERT_EQ(std::signbit(gotF16), std::signbit(x));
    }
  }
}

//===----------------------------------------------------------------------===//
// Kernels on 16-bit operands
//===----------------------------------------------------------------------===//

namespace {
using Tensors = test::DTypeTensors;

class HalfKernels : public ::testing::TestWithParam<DType> {};
} // namespace

/// Runs `kernel` once on f32 copies of the 16-bit inputs (the reference) and
/// once on the 16-bit tensors; the 16-bit outputs must be the f32 ones
/// rounded once.
static void expectSameAsF32(Tensors &ts, const std::string &kernel,
                            std::vector<int32_t> in, std::vector<int32_t> out,
                            std::vector<int64_t> iattrs = {},
                            std::vector<double> fattrs = {}) {
  std::vector<int32_t> in32, out32;
  for (int32_t id : in)
    in32.push_back(isHalfDType(ts.infos[id].dtype) ? ts.as(DType::F32, id)
                                                   : id);
  for (int32_t id : out)
    out32.push_back(ts.add(isHalfDType(ts.infos[id].dtype) ? DType::F32
                                                           : ts.infos[id].dtype,
                           ts.infos[id].shape));
  ts.run(kernel, in32, out32, iattrs, fattrs);
  ts.run(kernel, in, out, iattrs, fattrs);
  for (size_t o = 0; o < out.size(); ++o) {
    std::vector<float> want = ts.get(out32[o]);
    if (isHalfDType(ts.infos[out[o]].dtype))
      want = test::roundedTo(want, ts.infos[out[o]].dtype);
    std::vector<float> got = ts.get(out[o]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(floatBits(got[i]), floatBits(want[i]))
          << kernel << " output " << o << " at " << i;
  }
}

TEST_P(HalfKernels, MatmulAccumulatesInF32) {
  DType t = GetParam();
  Tensors ts;
  std::vector<float> a = test::normalValues(3 * 40 * 70, 1),
                     b = test::normalValues(70 * 50, 2);
  int32_t A = ts.add(t, {3, 40, 70}, a), B = ts.add(t, {70, 50}, b);
  int32_t C = ts.add(t, {3, 40, 50}), C32 = ts.add(DType::F32, {3, 40, 50});
  expectSameAsF32(ts, "matmul", {A, B}, {C}, {0, 0});
  // An f32 output from 16-bit operands (a weight gradient) is not rounded.
  expectSameAsF32(ts, "matmul", {A, B}, {C32}, {0, 0});
  // Against the exact product of the unrounded f32 data: the inputs' and
  // the output's rounding, within the format's precision.
  double eps = t == DType::BF16 ? 1.0 / 128 : 1.0 / 1024;
  std::vector<float> got = ts.get(C);
  for (int64_t bi = 0; bi < 3; ++bi)
    for (int64_t i = 0; i < 40; ++i)
      for (int64_t j = 0; j < 50; ++j) {
        double s = 0, mag = 0;
        for (int64_t k = 0; k < 70; ++k) {
          double p = double(a[(bi * 40 + i) * 70 + k]) * b[k * 50 + j];
          s += p;
          mag += std::fabs(p);
        }
        ASSERT_NEAR(got[(bi * 40 + i) * 50 + j], s, 2 * eps * mag + 1e-6);
      }
}

TEST_P(HalfKernels, ElementwiseOpsComputeInF32AndRoundOnce) {
  DType t = GetParam();
  Tensors ts;
  int32_t x = ts.add(t, {4, 8, 16}, test::normalValues(512, 3, 2));
  int32_t y = ts.add(t, {16}, test::normalValues(16, 4));
  int32_t bias32 = ts.add(DType::F32, {8, 1}, test::normalValues(8, 5));
  for (const char *k : {"add", "sub", "mul", "div"})
    expectSameAsF32(ts, k, {x, y}, {ts.add(t, {4, 8, 16})});
  // A 16-bit activation plus an f32 operand (mixed dtypes).
  expectSameAsF32(ts, "add", {x, bias32}, {ts.add(t, {4, 8, 16})});
  for (const char *k : {"neg", "relu", "exp", "tanh", "sigmoid", "erf"})
    expectSameAsF32(ts, k, {x}, {ts.add(t, {4, 8, 16})});
  expectSameAsF32(ts, "gelu", {x}, {ts.add(t, {4, 8, 16})}, {0});
  expectSameAsF32(ts, "gelu_grad", {x, x}, {ts.add(t, {4, 8, 16})}, {1});
  expectSameAsF32(ts, "relu_grad", {x, x}, {ts.add(t, {4, 8, 16})});
  expectSameAsF32(ts, "transpose", {x}, {ts.add(t, {16, 4, 8})}, {2, 0, 1});
  expectSameAsF32(ts, "broadcast_to", {y}, {ts.add(t, {3, 16})});
  expectSameAsF32(ts, "copy", {x}, {ts.add(t, {32, 16})});
  expectSameAsF32(ts, "softmax", {x}, {ts.add(t, {4, 8, 16})}, {2});
  expectSameAsF32(ts, "reduce_sum", {x}, {ts.add(DType::F32, {4, 16})}, {1});
  int32_t step = ts.add(DType::I64, {});
  std::memset(ts.store[step].data(), 0, 8);
  expectSameAsF32(ts, "dropout", {x, step},
                  {ts.add(t, {4, 8, 16}), ts.add(t, {4, 8, 16})}, {42}, {0.25});
}

TEST_P(HalfKernels, InPlaceOnA16BitTensor) {
  DType t = GetParam();
  Tensors ts;
  std::vector<float> v = test::normalValues(100, 6);
  int32_t x = ts.add(t, {100}, v),
          y = ts.add(t, {100}, test::normalValues(100, 7));
  std::vector<float> xs = ts.get(x), ys = ts.get(y);
  ts.infos[x].kind = TensorKind::Temp;
  // Output aliases input 0: the runtime passes the same buffer.
  std::vector<void *> buffers;
  for (auto &s : ts.store)
    buffers.push_back(s.data());
  runKernel(Instr{"mul", {x, y}, {x}, {}, {}}, ts.infos, buffers);
  std::vector<float> want(100);
  for (int i = 0; i < 100; ++i)
    want[i] = xs[i] * ys[i];
  want = test::roundedTo(want, t);
  std::vector<float> got = ts.get(x);
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(floatBits(got[i]), floatBits(want[i])) << i;
}

TEST_P(HalfKernels, CopyMovesBitsAndAViewMovesNothing) {
  DType t = GetParam();
  Tensors ts;
  // Words a round trip through f32 would change: a signaling NaN (it comes
  // back quiet) next to ordinary values.
  std::vector<uint16_t> words = {0x3f80, 0x7f81, 0xc000,
                                 0x7c01, 0x0001, 0x8000};
  int32_t x = ts.add(t, {2, 3}), y = ts.add(t, {6});
  std::memcpy(ts.store[x].data(), words.data(), 12);
  std::vector<void *> buffers;
  for (auto &s : ts.store)
    buffers.push_back(s.data());
  runKernel(Instr{"copy", {x}, {y}, {}, {}}, ts.infos, buffers);
  EXPECT_EQ(std::memcmp(ts.store[y].data(), words.data(), 12), 0);
  // In place (the plan's view of a reshape): the bytes stay as they are.
  buffers[y] = buffers[x];
  runKernel(Instr{"copy", {x}, {y}, {}, {}}, ts.infos, buffers);
  EXPECT_EQ(std::memcmp(ts.store[x].data(), words.data(), 12), 0);
}

TEST_P(HalfKernels, CastConvertsBetweenFloatTypes) {
  DType t = GetParam();
  DType other = t == DType::BF16 ? DType::F16 : DType::BF16;
  Tensors ts;
  std::vector<float> v = test::normalValues(3000, 8, 100);
  v[0] = 1e6f;  // beyond f16: Inf
  v[1] = 3e-7f; // an f16 subnormal
  v[2] = NAN;
  v[3] = -INFINITY;
  int32_t x = ts.add(DType::F32, {3000}, v);
  int32_t h = ts.add(t, {3000}), back = ts.add(DType::F32, {3000});
  int32_t o = ts.add(other, {3000});
  ts.run("cast", {x}, {h}, {0});
  ts.run("cast", {h}, {back}, {0});
  ts.run("cast", {h}, {o}, {0});
  std::vector<float> want = test::roundedTo(v, t), got = ts.get(back);
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) {
      ASSERT_TRUE(std::isnan(got[i]));
      continue;
    }
    ASSERT_EQ(floatBits(got[i]), floatBits(want[i])) << i;
  }
  EXPECT_EQ(got[0], t == DType::F16 ? INFINITY : want[0]);
  std::vector<float> twice = test::roundedTo(want, other), gotO = ts.get(o);
  for (size_t i = 4; i < v.size(); ++i)
    ASSERT_EQ(floatBits(gotO[i]), floatBits(twice[i])) << i;
  // A float -> int cast of a 16-bit tensor truncates its value.
  int32_t n = ts.add(DType::I64, {3000});
  ts.run("cast", {h}, {n}, {0});
  EXPECT_EQ(reinterpret_cast<const int64_t *>(ts.store[n].data())[5],
            static_cast<int64_t>(want[5]));
}

TEST_P(HalfKernels, IntegerOperandsStayIntegers) {
  DType t = GetParam();
  Tensors ts;
  int32_t logits = ts.add(t, {4, 5}, test::normalValues(20, 9));
  int32_t labels = ts.add(t, {4}, {0, 1, 2, 3});
  int32_t loss = ts.add(DType::F32, {});
  try {
    ts.run("softmax_cross_entropy", {logits, labels}, {loss}, {-100}, {0.0});
    FAIL() << "a 16-bit label tensor was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("must be i64"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("bf16/f16 operands"),
              std::string::npos)
        << e.what();
  }
  int32_t x = ts.add(t, {4});
  EXPECT_THROW(ts.run("cast", {logits}, {x}, {1}), Error); // to_bool -> float
}

INSTANTIATE_TEST_SUITE_P(, HalfKernels,
                         ::testing::Values(DType::BF16, DType::F16),
                         [](const auto &info) {
                           return std::string(dtypeName(info.param));
                         });

TEST(Half, DTypeNamesAndSizes) {
  EXPECT_EQ(parseDType("bf16"), DType::BF16);
  EXPECT_EQ(parseDType("f16"), DType::F16);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_STREQ(dtypeName(DType::F16), "f16");
  EXPECT_THROW(parseDType("f64"), Error);
}

//===----------------------------------------------------------------------===//
// A Session running 16-bit temporaries (compiled and eager)
//===----------------------------------------------------------------------===//

TEST(HalfSession, CompiledAndEagerRun16BitTemps) {
  Artifact a;
  auto add = [&](const std::string &name, std::vector<int64_t> shape,
                 TensorKind kind, DType dt, int64_t arena = -1) {
    TensorInfo t;
    t.name = name;
    t.shape = std::move(shape);
    t.kind = kind;
    t.dtype = dt;
    if (kind == TensorKind::Temp) {
      t.program = "p";
      t.arenaOffset = arena;
    }
    a.tensors.push_back(t);
    return static_cast<int32_t>(a.tensors.size() - 1);
  };
  std::vector<float> w = {0.5f, -0.25f, 0.75f, 0.1f, -0.3f, 0.2f};
  int32_t x = add("x", {4, 3}, TensorKind::Input, DType::F32);
  int32_t W = add("W", {3, 2}, TensorKind::Param, DType::F32);
  a.tensors[W].dataOffset = a.addBlob(w.data(), w.size() * sizeof(float));
  // 2-byte tensors at 2-byte aligned offsets, the relu in place.
  int32_t xb = add("xb", {4, 3}, TensorKind::Temp, DType::BF16, 0);
  int32_t wb = add("wb", {3, 2}, TensorKind::Temp, DType::BF16, 26);
  int32_t hb = add("hb", {4, 2}, TensorKind::Temp, DType::BF16, 38);
  int32_t y = add("y", {4, 2}, TensorKind::Temp, DType::F32, 64);
  Program p;
  p.name = "p";
  p.inputs = {x};
  p.outputs = {y};
  p.instrs = {{"cast", {x}, {xb}, {0}, {}},
              {"cast", {W}, {wb}, {0}, {}},
              {"matmul", {xb, wb}, {hb}, {0, 0}, {}},
              {"relu", {hb}, {hb}, {}, {}},
              {"cast", {hb}, {y}, {0}, {}}};
  p.arenaBytes = 96;
  a.programs.push_back(p);
  std::vector<float> xs = {1.5f,  -2.0f, 0.3f, 0.7f,  0.01f, 3.0f,
                           -1.0f, 1.0f,  2.0f, 0.25f, 0.5f,  -0.125f};
  // Reference: bf16-rounded operands, f32 products, one rounding, relu.
  std::vector<float> want(8);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      float s = 0;
      for (int k = 0; k < 3; ++k)
        s += bf16ToF32(f32ToBf16(xs[i * 3 + k])) *
             bf16ToF32(f32ToBf16(w[k * 2 + j]));
      want[i * 2 + j] = std::max(0.0f, bf16ToF32(f32ToBf16(s)));
    }
  for (ExecMode mode : {ExecMode::Compiled, ExecMode::Eager}) {
    cpu::CpuSession s(a, mode);
    std::memcpy(s.data(x), xs.data(), xs.size() * sizeof(float));
    s.run("p");
    const float *got = static_cast<const float *>(s.data(y));
    for (int i = 0; i < 8; ++i)
      // sgemm may sum in another order: at most one bf16 ulp apart.
      EXPECT_NEAR(got[i], want[i], std::fabs(want[i]) / 128 + 1e-6f)
          << "mode " << int(mode) << " at " << i;
  }
}

//===- InitializerTest.cpp - Seeded initial values (--weights seeded) -----===//
//
// fillInitial must be deterministic, independent of how a tensor is split
// (threads, chunks, its size), draw the distributions it claims, and round
// to 16-bit floats exactly once. The Session must use it.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Initializer.h"
#include "runtime/cpu/CpuSession.h"
#include "runtime/core/prelude/Half.h"
#include "runtime/core/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>

using namespace tcc::rt;

static TensorInfo seeded(InitSpec::Kind kind, double a, double b, uint64_t seed,
                         std::vector<int64_t> shape, DType dt = DType::F32) {
  TensorInfo t;
  t.name = "w";
  t.kind = TensorKind::Param;
  t.dtype = dt;
  t.shape = std::move(shape);
  t.init.kind = kind;
  t.init.a = a;
  t.init.b = b;
  t.init.seed = seed;
  return t;
}

static std::vector<float> fillF32(const TensorInfo &t) {
  std::vector<float> v(t.numElements());
  fillInitial(t, v.data());
  return v;
}

static std::vector<uint16_t> fill16(const TensorInfo &t) {
  std::vector<uint16_t> v(t.numElements());
  fillInitial(t, v.data());
  return v;
}

static bool sameBytes(const std::vector<float> &x,
                      const std::vector<float> &y) {
  return x.size() == y.size() &&
         std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

TEST(Initializer, SameSeedSameBytesOtherSeedsDiffer) {
  for (auto kind : {InitSpec::Kind::Normal, InitSpec::Kind::Uniform}) {
    std::vector<float> a = fillF32(seeded(kind, 0, 1, 42, {1000}));
    std::vector<float> b = fillF32(seeded(kind, 0, 1, 42, {1000}));
    std::vector<float> c = fillF32(seeded(kind, 0, 1, 43, {1000}));
    EXPECT_TRUE(sameBytes(a, b)) << initKindName(kind);
    int equal = 0;
    for (size_t i = 0; i < a.size(); ++i)
      equal += a[i] == c[i];
    EXPECT_LE(equal, 2) << initKindName(kind); // chance coincidences only
    // Not a constant stream either.
    int repeats = 0;
    for (size_t i = 1; i < a.size(); ++i)
      repeats += a[i] == a[i - 1];
    EXPECT_LE(repeats, 2) << initKindName(kind);
  }
}

// Element i is a pure function of (seed, i): the same whether computed
// alone, in a smaller or larger tensor, in one chunk or by many threads.
TEST(Initializer, ValuesDoNotDependOnTheSplit) {
  for (auto kind : {InitSpec::Kind::Normal, InitSpec::Kind::Uniform}) {
    // Odd and over several of fillInitial's 65536-element chunks.
    TensorInfo big = seeded(kind, 0.25, 0.75, 7, {3, 70001});
    ThreadPool::setGlobalThreads(1);
    std::vector<float> one = fillF32(big);
    ThreadPool::setGlobalThreads(4);
    std::vector<float> four = fillF32(big);
    ThreadPool::setGlobalThreads(ThreadPool::defaultThreads());
    EXPECT_TRUE(sameBytes(one, four)) << initKindName(kind);

    std::vector<float> small = fillF32(seeded(kind, 0.25, 0.75, 7, {1001}));
    EXPECT_EQ(0, std::memcmp(small.data(), one.data(), 1001 * sizeof(float)))
        << initKindName(kind);
    for (int64_t i : {int64_t(0), int64_t(1), int64_t(2), int64_t(65535),
                      int64_t(65536), int64_t(131073), int64_t(210002)})
      EXPECT_EQ(one[i], static_cast<float>(initialValue(big.init, i)))
          << initKindName(kind) << " element " << i;
  }
}

TEST(Initializer, NormalHasItsMoments) {
  const double mean = 0.5, std = 2.0;
  std::vector<float> v =
      fillF32(seeded(InitSpec::Kind::Normal, mean, std, 1234, {1000000}));
  double s = 0, s2 = 0, s4 = 0, within1 = 0, lag1 = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    double z = (v[i] - mean) / std;
    s += z;
    s2 += z * z;
    s4 += z * z * z * z;
    within1 += std::fabs(z) < 1;
    if (i)
      lag1 += z * ((v[i - 1] - mean) / std);
  }
  double n = static_cast<double>(v.size());
  // Standard errors over 1e6 draws: mean 1e-3, std 7e-4, P(|z|<1) 5e-4,
  // kurtosis 2.5e-3, lag-1 correlation 1e-3; the bounds are about 4-5 of them.
  EXPECT_NEAR(s / n, 0.0, 5e-3);
  EXPECT_NEAR(std::sqrt(s2 / n), 1.0, 3e-3);
  EXPECT_NEAR(within1 / n, 0.682689, 2.5e-3);
  EXPECT_NEAR(s4 / n, 3.0, 0.03);
  // Neighbours (the cos and sin of one Box-Muller pair among them) are
  // uncorrelated.
  EXPECT_NEAR(lag1 / n, 0.0, 5e-3);
}

TEST(Initializer, UniformStaysInRangeWithItsMoments) {
  const double lo = -0.3, hi = 0.7;
  std::vector<float> v =
      fillF32(seeded(InitSpec::Kind::Uniform, lo, hi, 99, {1000000}));
  double s = 0, s2 = 0, lowQuarter = 0;
  float mn = INFINITY, mx = -INFINITY;
  for (float x : v) {
    mn = std::min(mn, x);
    mx = std::max(mx, x);
    s += x;
    s2 += x * x;
    lowQuarter += x < lo + 0.25 * (hi - lo);
  }
  double n = static_cast<double>(v.size());
  EXPECT_GE(mn, static_cast<float>(lo));
  EXPECT_LT(mx, static_cast<float>(hi));
  EXPECT_LT(mn, lo + 1e-4); // reaches both ends
  EXPECT_GT(mx, hi - 1e-4);
  double mean = s / n;
  EXPECT_NEAR(mean, (lo + hi) / 2, 2e-3);
  EXPECT_NEAR(s2 / n - mean * mean, (hi - lo) * (hi - lo) / 12, 1e-3);
  EXPECT_NEAR(lowQuarter / n, 0.25, 2.5e-3);
}

// Values that round up to b are stepped down: [1, 1 + ulp) has only 1.
TEST(Initializer, UniformNeverRoundsUpToItsBound) {
  TensorInfo f =
      seeded(InitSpec::Kind::Uniform, 1.0, 1.0 + 0x1.0p-23, 5, {10000});
  for (float x : fillF32(f))
    ASSERT_EQ(x, 1.0f);
  TensorInfo b = seeded(InitSpec::Kind::Uniform, 1.0, 1.0 + 0x1.0p-7, 5,
                        {10000}, DType::BF16);
  for (uint16_t h : fill16(b))
    ASSERT_EQ(bf16ToF32(h), 1.0f);
  TensorInfo h16 = seeded(InitSpec::Kind::Uniform, -1.0 - 0x1.0p-10, -1.0, 5,
                          {10000}, DType::F16);
  int low = 0;
  for (uint16_t h : fill16(h16))
    low += f16ToF32(h) == -1.0f - 0x1.0p-10f;
  EXPECT_EQ(low, 10000); // -1 itself is b, excluded
  // An empty interval [a, a) gives a.
  for (float x : fillF32(seeded(InitSpec::Kind::Uniform, 2, 2, 1, {10})))
    EXPECT_EQ(x, 2.0f);
}

TEST(Initializer, ConstantIsExactInEveryDType) {
  std::vector<float> f =
      fillF32(seeded(InitSpec::Kind::Constant, 0.1, 0, 0, {2, 3}));
  for (float x : f)
    EXPECT_EQ(x, 0.1f);
  for (uint16_t h :
       fill16(seeded(InitSpec::Kind::Constant, 0.1, 0, 0, {5}, DType::BF16)))
    EXPECT_EQ(h, f32ToBf16(0.1f));
  for (uint16_t h :
       fill16(seeded(InitSpec::Kind::Constant, 0.1, 0, 0, {5}, DType::F16)))
    EXPECT_EQ(h, f32ToF16(0.1f));
  TensorInfo i = seeded(InitSpec::Kind::Constant, -3, 0, 0, {4}, DType::I64);
  std::vector<int64_t> iv(4, 7);
  fillInitial(i, iv.data());
  EXPECT_EQ(iv, std::vector<int64_t>(4, -3));
  // A scalar and an empty tensor.
  EXPECT_EQ(fillF32(seeded(InitSpec::Kind::Constant, 1e30, 0, 0, {})),
            std::vector<float>{1e30f});
  EXPECT_TRUE(
      fillF32(seeded(InitSpec::Kind::Constant, 1, 0, 0, {0, 4})).empty());
}

// 16-bit floats are the f32 value rounded once (Half.h), not drawn apart.
TEST(Initializer, HalfTypesRoundTheF32Values) {
  for (auto kind : {InitSpec::Kind::Normal, InitSpec::Kind::Uniform}) {
    std::vector<float> f = fillF32(seeded(kind, 0.1, 3.0, 11, {5000}));
    std::vector<uint16_t> b =
        fill16(seeded(kind, 0.1, 3.0, 11, {5000}, DType::BF16));
    std::vector<uint16_t> h =
        fill16(seeded(kind, 0.1, 3.0, 11, {5000}, DType::F16));
    for (size_t i = 0; i < f.size(); ++i) {
      // Rounding to 16 bits may reach b (3.0) for uniform; then one step down.
      uint16_t eb = f32ToBf16(f[i]), eh = f32ToF16(f[i]);
      if (kind == InitSpec::Kind::Uniform && bf16ToF32(eb) >= 3.0f)
        eb -= 1;
      if (kind == InitSpec::Kind::Uniform && f16ToF32(eh) >= 3.0f)
        eh -= 1;
      ASSERT_EQ(b[i], eb) << initKindName(kind) << " " << i;
      ASSERT_EQ(h[i], eh) << initKindName(kind) << " " << i;
    }
  }
}

TEST(Initializer, RejectsWhatItCannotGenerate) {
  TensorInfo blob = seeded(InitSpec::Kind::Blob, 0, 0, 0, {2});
  float out[2];
  EXPECT_THROW(fillInitial(blob, out), Error);
  EXPECT_THROW(initialValue(blob.init, 0), Error);
  TensorInfo ints = seeded(InitSpec::Kind::Normal, 0, 1, 0, {2}, DType::I64);
  int64_t iv[2];
  try {
    fillInitial(ints, iv);
    ADD_FAILURE() << "normal i64 accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("needs a float tensor"),
              std::string::npos)
        << e.what();
  }
  TensorInfo frac =
      seeded(InitSpec::Kind::Constant, 0.5, 0, 0, {2}, DType::I64);
  EXPECT_THROW(fillInitial(frac, iv), Error);
}

// The session draws seeded tensors instead of reading the blob: a param
// with a normal and a state with a constant, nothing for them in the blob.
TEST(Initializer, SessionFillsSeededTensors) {
  Artifact a;
  a.tensors.push_back(seeded(InitSpec::Kind::Normal, 0, 0.02, 77, {64, 32}));
  TensorInfo m = seeded(InitSpec::Kind::Constant, 0.5, 0, 0, {64, 32});
  m.name = "w.m";
  m.kind = TensorKind::State;
  a.tensors.push_back(m);
  TensorInfo step = seeded(InitSpec::Kind::Constant, 3, 0, 0, {}, DType::I64);
  step.name = "step";
  step.kind = TensorKind::State;
  a.tensors.push_back(step);
  ASSERT_TRUE(a.blob.empty());
  cpu::CpuSession s(a, ExecMode::Compiled);
  std::vector<float> w = fillF32(a.tensors[0]);
  EXPECT_EQ(0, std::memcmp(s.data(0), w.data(), w.size() * sizeof(float)));
  const float *mv = static_cast<const float *>(s.data(1));
  for (int i = 0; i < 64 * 32; ++i)
    ASSERT_EQ(mv[i], 0.5f);
  EXPECT_EQ(*static_cast<const int64_t *>(s.data(2)), 3);
}

// tcc-shadow-weights' copies: a cast initializer is its source's initial
// value (drawn or from the blob) rounded to nearest-even, in both sessions'
// loader (fillInitialValue), and fillInitial alone refuses it.
TEST(Initializer, CastIsTheRoundedSourceValue) {
  Artifact a;
  a.tensors.push_back(seeded(InitSpec::Kind::Normal, 0, 0.02, 77, {64, 33}));
  std::vector<float> blob = {1.0f, 1.00390625f, -3.3e-3f, 65504.0f, 1e-8f};
  TensorInfo b;
  b.name = "b";
  b.kind = TensorKind::Param;
  b.shape = {5};
  b.dataOffset = a.addBlob(blob.data(), blob.size() * sizeof(float));
  a.tensors.push_back(b);
  for (auto [name, src, dt] : {std::tuple{"w.bf16", "w", DType::BF16},
                               std::tuple{"b.bf16", "b", DType::BF16},
                               std::tuple{"b.f16", "b", DType::F16}}) {
    TensorInfo c;
    c.name = name;
    c.kind = TensorKind::State;
    c.dtype = dt;
    c.shape = a.tensors[a.findTensor(src)].shape;
    c.init.kind = InitSpec::Kind::Cast;
    c.init.source = src;
    a.tensors.push_back(c);
  }
  validateArtifact(a);
  cpu::CpuSession s(a, ExecMode::Compiled);
  std::vector<float> w = fillF32(a.tensors[0]);
  for (int32_t id = 2; id < 5; ++id) {
    const TensorInfo &c = a.tensors[id];
    const std::vector<float> &src = id == 2 ? w : blob;
    const auto *got = static_cast<const uint16_t *>(s.data(id));
    for (size_t i = 0; i < src.size(); ++i)
      ASSERT_EQ(got[i],
                c.dtype == DType::BF16 ? f32ToBf16(src[i]) : f32ToF16(src[i]))
          << c.name << " " << i;
  }
  EXPECT_THROW(fill16(a.tensors[2]), Error);
}

// The documented generator (Initializer.cpp's header comment) written out
// with libm: SplitMix64 words, 53-bit uniforms, Box-Muller in double. The
// runtime's own ln/cos/sin polynomials must agree to rounding.
static uint64_t refMix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double refNormal(uint64_t seed, int64_t i) {
  const uint64_t golden = 0x9e3779b97f4a7c15ull;
  uint64_t key = refMix(seed + golden), p = static_cast<uint64_t>(i) / 2;
  uint64_t w1 = refMix(key + (2 * p + 1) * golden);
  uint64_t w2 = refMix(key + (2 * p + 2) * golden);
  double u1 = static_cast<double>((w1 >> 11) + 1) * 0x1.0p-53;
  double u2 = static_cast<double>(w2 >> 11) * 0x1.0p-53;
  double r = std::sqrt(-2 * std::log(u1)), t = 2 * M_PI * u2;
  return i % 2 ? r * std::sin(t) : r * std::cos(t);
}

TEST(Initializer, NormalIsBoxMullerOfTheDocumentedStream) {
  InitSpec s;
  s.kind = InitSpec::Kind::Normal;
  s.a = 0;
  s.b = 1;
  s.seed = 2024;
  double worst = 0;
  int sameFloat = 0;
  const int n = 200000;
  for (int64_t i = 0; i < n; ++i) {
    double got = initialValue(s, i), want = refNormal(s.seed, i);
    worst = std::max(worst, std::fabs(got - want));
    sameFloat += static_cast<float>(got) == static_cast<float>(want);
  }
  EXPECT_LT(worst, 1e-13) << "largest difference " << worst;
  EXPECT_GE(sameFloat, n - 5); // differ only on a rounding boundary
}

// The bits of seeded weights are part of the artifact's meaning: the same
// artifact must give the same weights in every tcc version and on every
// machine. These pin the first values of seed 0 (and would catch an
// accidental change of the generator).
TEST(Initializer, PinnedValuesOfSeedZero) {
  std::vector<float> n = fillF32(seeded(InitSpec::Kind::Normal, 0, 1, 0, {4}));
  std::vector<float> u = fillF32(seeded(InitSpec::Kind::Uniform, 0, 1, 0, {4}));
  EXPECT_EQ(n, (std::vector<float>{-0x1.1d9164p-2f, -0x1.c31ae8p-1f,
                                   -0x1.874838p-1f, -0x1.257354p+0f}));
  EXPECT_EQ(u, (std::vector<float>{0x1.4e0dbap-1f, 0x1.670546p-1f,
                                   0x1.8c6a46p-2f, 0x1.501576p-1f}));
}

//===- CudaNonFiniteEmuTest.cpp - countNonFinite, emulated ----------------===//
//
// runtime/cuda/CudaNonFinite.cu compiled for the CPU (CudaKernelEmu.h): the
// device count must equal a host count for every float dtype, across
// several blocks of the grid-stride loop, and must not count the largest
// finite values.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/prelude/Half.h"
#include "runtime/cuda/CudaNonFinite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace tcc::rt;

namespace {

/// 10,000 normal values with NaN, +-Inf and the extremes sprinkled in.
std::vector<float> sample(int64_t *bad) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  std::vector<float> v(10000);
  for (float &x : v)
    x = nd(rng);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  v[0] = nan;
  v[17] = inf;
  v[4095] = -inf;
  v[9999] = nan;
  v[5000] = std::numeric_limits<float>::max(); // finite
  v[5001] = -std::numeric_limits<float>::max();
  v[5002] = std::numeric_limits<float>::denorm_min();
  *bad = 4;
  return v;
}

unsigned long long countOn(void *data, DType dt, int64_t n, int smCount) {
  std::vector<int64_t> shape{n};
  TensorView t{data, dt, &shape, n};
  unsigned long long count = 0;
  cuda::countNonFinite(t, &count, nullptr, smCount);
  return count;
}

} // namespace

TEST(CudaNonFinite, F32) {
  int64_t bad = 0;
  std::vector<float> v = sample(&bad);
  for (int sm : {1, 3})
    EXPECT_EQ(countOn(v.data(), DType::F32, (int64_t)v.size(), sm),
              (unsigned long long)bad)
        << sm << " SMs";
  // A healthy tensor counts nothing; an empty one is not launched.
  std::vector<float> ok(1000, 1.5f);
  EXPECT_EQ(countOn(ok.data(), DType::F32, 1000, 2), 0u);
  EXPECT_EQ(countOn(ok.data(), DType::F32, 0, 2), 0u);
}

TEST(CudaNonFinite, SixteenBit) {
  int64_t bad = 0;
  std::vector<float> v = sample(&bad);
  std::vector<uint16_t> b(v.size()), h(v.size());
  int64_t badH = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    b[i] = f32ToBf16(v[i]);
    h[i] = f32ToF16(v[i]);
    badH += std::isfinite(f16ToF32(h[i])) ? 0 : 1;
  }
  EXPECT_EQ(countOn(b.data(), DType::BF16, (int64_t)b.size(), 2),
            (unsigned long long)bad + 2); // +-FLT_MAX round to +-Inf
  EXPECT_EQ(countOn(h.data(), DType::F16, (int64_t)h.size(), 2),
            (unsigned long long)badH);
  EXPECT_GT(badH, bad); // f16 overflows at 65504
}

TEST(CudaNonFinite, RejectsIntegers) {
  std::vector<int64_t> v(4, 0);
  EXPECT_THROW(countOn(v.data(), DType::I64, 4, 1), Error);
}

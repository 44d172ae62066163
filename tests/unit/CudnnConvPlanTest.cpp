//===- CudnnConvPlanTest.cpp - What cuDNN is told about a convolution -----===//
//
// runtime/cuda/CudnnConvPlan.h without a GPU: the sizes, the asymmetric pads
// turned into a zero-padded copy plus cuDNN's symmetric pads (checked by
// computing convolutions both ways on the host: the ABI's pads directly,
// and cuDNN's view of the padded copy), and the rule that keeps one of
// cuDNN's heuristic answers.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudnnConvPlan.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/abi/WindowGeometry.h"

#include <gtest/gtest.h>

#include <climits>
#include <random>

using namespace tcc::rt;
using namespace tcc::rt::cuda;

namespace {

struct Geo {
  int64_t n, c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups;
  tcc::rt::abi::Conv2dAttrs attrs() const {
    tcc::rt::abi::Conv2dAttrs a;
    a.strideH = sh, a.strideW = sw, a.padTop = pt, a.padLeft = pl;
    a.padBottom = pb, a.padRight = pr, a.dilationH = dh, a.dilationW = dw;
    a.groups = groups;
    return a;
  }
  int64_t oh() const {
    return tcc::rt::abi::windowOut(h, kh, sh, pt, pb, dh, false);
  }
  int64_t ow() const {
    return tcc::rt::abi::windowOut(w, kw, sw, pl, pr, dw, false);
  }
  std::vector<int64_t> x() const { return {n, c, h, w}; }
  std::vector<int64_t> wt() const { return {o, c / groups, kh, kw}; }
  std::vector<int64_t> y() const { return {n, o, oh(), ow()}; }
};

/// A direct convolution of x [n, c, h, w] with pads (top, left) and an
/// output of oh x ow (so the end pads are implied), groups 1.
std::vector<double> convRef(const std::vector<double> &x, int64_t n, int64_t c,
                            int64_t h, int64_t w, const std::vector<double> &k,
                            int64_t o, int64_t kh, int64_t kw, int64_t sh,
                            int64_t sw, int64_t pt, int64_t pl, int64_t dh,
                            int64_t dw, int64_t oh, int64_t ow) {
  std::vector<double> y(n * o * oh * ow, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t q = 0; q < o; ++q)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double s = 0;
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t u = 0; u < kh; ++u)
              for (int64_t v = 0; v < kw; ++v) {
                int64_t r = i * sh - pt + u * dh, col = j * sw - pl + v * dw;
                if (r < 0 || r >= h || col < 0 || col >= w)
                  continue;
                s += x[((b * c + ch) * h + r) * w + col] *
                     k[((q * c + ch) * kh + u) * kw + v];
              }
          y[((b * o + q) * oh + i) * ow + j] = s;
        }
  return y;
}

} // namespace

TEST(CudnnConvPlan, SymmetricPadsNeedNoCopy) {
  Geo g{8, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}; // ResNet 3x3
  CudnnConvShape s =
      cudnnConvShape(ConvPass::Forward, g.x(), g.wt(), g.y(), g.attrs(), true);
  EXPECT_FALSE(s.padded);
  EXPECT_EQ(s.paddedBytes(), 0);
  EXPECT_EQ(s.n, 8);
  EXPECT_EQ(s.c, 64);
  EXPECT_EQ(s.h, 56);
  EXPECT_EQ(s.cg, 64);
  EXPECT_EQ(s.padH, 1);
  EXPECT_EQ(s.padW, 1);
  EXPECT_EQ(s.oh, 56);
  EXPECT_TRUE(s.bias);
  EXPECT_FALSE(s.emptyOutput || s.emptySum);
  EXPECT_EQ(cudnnOutDim(s.h, s.padH, s.kh, s.strideH, s.dilH), s.oh);
}

TEST(CudnnConvPlan, GroupsStrideDilationPassThrough) {
  Geo g{2, 32, 15, 17, 32, 3, 5, 2, 3, 2, 4, 2, 4, 2, 2, 32}; // depthwise
  CudnnConvShape s = cudnnConvShape(ConvPass::GradWeight, g.x(), g.wt(), g.y(),
                                    g.attrs(), false);
  EXPECT_EQ(s.groups, 32);
  EXPECT_EQ(s.cg, 1);
  EXPECT_EQ(s.strideH, 2);
  EXPECT_EQ(s.strideW, 3);
  EXPECT_EQ(s.dilH, 2);
  EXPECT_EQ(s.dilW, 2);
  EXPECT_EQ(s.kw, 5);
  EXPECT_FALSE(s.padded);
  EXPECT_EQ(s.pass, ConvPass::GradWeight);
}

// Every geometry: cuDNN's output size over the padded copy with symmetric
// pads is the ABI's, and the copy is there exactly when pads differ.
TEST(CudnnConvPlan, AsymmetricPadsGiveTheAbiOutputSize) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  int checked = 0;
  for (int t = 0; t < 2000; ++t) {
    Geo g{pick(1, 3), 2,          pick(1, 12), pick(1, 12),
          3,          pick(1, 4), pick(1, 4),  pick(1, 3),
          pick(1, 3), pick(0, 4), pick(0, 4),  pick(0, 4),
          pick(0, 4), pick(1, 3), pick(1, 3),  1};
    if (g.oh() < 1 || g.ow() < 1)
      continue;
    ++checked;
    CudnnConvShape s = cudnnConvShape(ConvPass::Forward, g.x(), g.wt(), g.y(),
                                      g.attrs(), false);
    EXPECT_EQ(s.padded, g.pt != g.pb || g.pl != g.pr);
    EXPECT_EQ(s.padH, std::min(g.pt, g.pb));
    EXPECT_EQ(s.h, g.h + std::abs(g.pt - g.pb));
    EXPECT_EQ(s.w, g.w + std::abs(g.pl - g.pr));
    EXPECT_EQ(cudnnOutDim(s.h, s.padH, g.kh, g.sh, g.dh), g.oh());
    EXPECT_EQ(cudnnOutDim(s.w, s.padW, g.kw, g.sw, g.dw), g.ow());
    EXPECT_EQ(s.paddedBytes(), s.padded ? g.n * g.c * s.h * s.w * 4 : 0);
  }
  EXPECT_GT(checked, 500);
}

// The copy's placement: a convolution with the ABI's pads equals cuDNN's
// (symmetric pads) over x written at (extraTop, extraLeft) of zeros.
TEST(CudnnConvPlan, PaddedCopyComputesTheSameConvolution) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> val(-1, 1);
  const Geo geos[] = {
      {1, 2, 5, 6, 2, 3, 3, 1, 1, 0, 0, 1, 1, 1, 1, 1}, // TF "same" (end)
      {2, 1, 7, 5, 3, 2, 3, 2, 2, 2, 0, 1, 3, 1, 1, 1}, // mixed, strided
      {1, 2, 4, 5, 2, 2, 2, 3, 3, 2, 2, 2, 2, 2, 1, 1}, // pads > k
      {1, 1, 9, 8, 2, 3, 2, 2, 1, 3, 1, 0, 2, 2, 3, 1}, // dilated
  };
  for (const Geo &g : geos) {
    CudnnConvShape s = cudnnConvShape(ConvPass::Forward, g.x(), g.wt(), g.y(),
                                      g.attrs(), false);
    std::vector<double> x(g.n * g.c * g.h * g.w), k(g.o * g.c * g.kh * g.kw);
    for (double &v : x)
      v = val(rng);
    for (double &v : k)
      v = val(rng);
    std::vector<double> want =
        convRef(x, g.n, g.c, g.h, g.w, k, g.o, g.kh, g.kw, g.sh, g.sw, g.pt,
                g.pl, g.dh, g.dw, g.oh(), g.ow());
    std::vector<double> xp(int64_t(s.n) * s.c * s.h * s.w, 0.0);
    for (int64_t p = 0; p < g.n * g.c; ++p)
      for (int64_t r = 0; r < g.h; ++r)
        for (int64_t col = 0; col < g.w; ++col)
          xp[(p * s.h + r + s.extraTop) * s.w + col + s.extraLeft] =
              x[(p * g.h + r) * g.w + col];
    std::vector<double> got =
        convRef(xp, s.n, s.c, s.h, s.w, k, s.o, s.kh, s.kw, s.strideH,
                s.strideW, s.padH, s.padW, s.dilH, s.dilW, s.oh, s.ow);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-12) << "element " << i;
  }
}

TEST(CudnnConvPlan, GradientsSeeTheForwardGeometry) {
  Geo g{2, 4, 9, 9, 6, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 2};
  for (ConvPass p : {ConvPass::GradInput, ConvPass::GradWeight}) {
    CudnnConvShape s =
        cudnnConvShape(p, g.x(), g.wt(), g.y(), g.attrs(), false);
    EXPECT_TRUE(s.padded);
    EXPECT_EQ(s.extraTop, 0);
    EXPECT_EQ(s.extraLeft, 0);
    EXPECT_EQ(s.h, 10);
    EXPECT_EQ(s.srcH, 9);
    EXPECT_EQ(s.oh, 4);
    EXPECT_EQ(s.groups, 2);
    EXPECT_EQ(s.cg, 2);
  }
}

TEST(CudnnConvPlan, EmptyOutputsAndEmptySums) {
  Geo g{0, 4, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}; // no batch
  EXPECT_TRUE(
      cudnnConvShape(ConvPass::Forward, g.x(), g.wt(), g.y(), g.attrs(), true)
          .emptyOutput);
  EXPECT_TRUE(cudnnConvShape(ConvPass::GradInput, g.x(), g.wt(), g.y(),
                             g.attrs(), false)
                  .emptyOutput);
  // The weight gradient sums over the batch: zeros.
  CudnnConvShape s = cudnnConvShape(ConvPass::GradWeight, g.x(), g.wt(), g.y(),
                                    g.attrs(), false);
  EXPECT_FALSE(s.emptyOutput);
  EXPECT_TRUE(s.emptySum);
  Geo noOut{2, 4, 8, 8, 0, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  CudnnConvShape d = cudnnConvShape(ConvPass::GradInput, noOut.x(), noOut.wt(),
                                    noOut.y(), noOut.attrs(), false);
  EXPECT_TRUE(d.emptySum); // dx sums over no output channels
}

TEST(CudnnConvPlan, RefusesWhatIntDescriptorsCannotHold) {
  Geo g{1024, 64, 256, 256, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}; // 4 Gi
  try {
    cudnnConvShape(ConvPass::Forward, g.x(), g.wt(), g.y(), g.attrs(), false);
    FAIL() << "expected an Error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("2^31 - 1 elements"),
              std::string::npos)
        << e.what();
  }
}

TEST(CudnnConvPlan, PickPrefersDeterministicWithinTheCap) {
  std::vector<ConvAlgoCandidate> c = {
      {1, true, false, 0},               // fastest, not deterministic
      {6, false, true, 0},               // does not run
      {7, true, true, int64_t(2) << 30}, // deterministic, over the cap
      {0, true, true, 4096},             // deterministic within it
  };
  EXPECT_EQ(pickConvAlgo(c), std::optional<size_t>(3));
  c[3].deterministic = false; // none deterministic fits: the first that runs
  EXPECT_EQ(pickConvAlgo(c), std::optional<size_t>(0));
  // Nothing within the cap: the least workspace among those that run.
  std::vector<ConvAlgoCandidate> big = {{2, true, true, int64_t(3) << 30},
                                        {3, true, false, int64_t(1) << 30},
                                        {4, false, true, 0}};
  EXPECT_EQ(pickConvAlgo(big), std::optional<size_t>(1));
  EXPECT_EQ(pickConvAlgo({{5, false, true, 0}}), std::nullopt);
  EXPECT_EQ(pickConvAlgo({}), std::nullopt);
}

//===- OneDnnKernelsTest.cpp - oneDNN kernels against the loops -----------===//
//
// The CPU's convolution kernels run on oneDNN where it takes the case; these
// run each on odd geometries both ways (setCnnPath) and compare with the
// runtime's own im2col loops, which KernelsConvTest checks against the
// definition. The oneDNN call counter shows the cases did take it.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtil.h"
#include "runtime/cpu/CnnPath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

/// Restores the default path when a test ends, passing or not.
struct PathGuard {
  ~PathGuard() { cpu::setCnnPath(cpu::CnnPath::OneDnn); }
};

/// got and want agree to `tol` relative to want's largest magnitude (the two
/// sum in different orders).
void expectNear(const std::vector<float> &got, const std::vector<float> &want,
                double tol, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1e-6;
  for (float v : want)
    scale = std::max(scale, (double)std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * scale) << what << " at " << i;
}

struct ConvCase {
  const char *name;
  int64_t n, c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, groups;

  static int64_t out(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1,
                     int64_t d) {
    return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
  }
  std::vector<int64_t> xs() const { return {n, c, h, w}; }
  std::vector<int64_t> ws() const { return {o, c / groups, kh, kw}; }
  std::vector<int64_t> ys() const {
    return {n, o, out(h, kh, sh, pt, pb, dh), out(w, kw, sw, pl, pr, dw)};
  }
  std::vector<int64_t> attrs() const {
    return {sh, sw, pt, pl, pb, pr, dh, dw, groups};
  }
};

/// y (with bias), y (without), dx and dw on the current path.
std::vector<std::vector<float>> runConv(const ConvCase &g) {
  auto xs = g.xs(), ws = g.ws(), ys = g.ys();
  KernelHarness h;
  int32_t x = h.f32(xs, randomValues(numel(xs), 1));
  int32_t w = h.f32(ws, randomValues(numel(ws), 2));
  int32_t b = h.f32({g.o}, randomValues(g.o, 3));
  int32_t dy = h.f32(ys, randomValues(numel(ys), 4));
  int32_t y = h.out(ys), ynb = h.out(ys), dx = h.out(xs), dw = h.out(ws);
  h.run("conv2d", {x, w, b}, {y}, g.attrs());
  h.run("conv2d", {x, w}, {ynb}, g.attrs());
  h.run("conv2d_grad_input", {dy, w}, {dx}, g.attrs());
  h.run("conv2d_grad_weight", {dy, x}, {dw}, g.attrs());
  return {h.get(y), h.get(ynb), h.get(dx), h.get(dw)};
}

class OneDnnConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(OneDnnConv, MatchesTheIm2colLoops) {
  // setup.sh's sanitizer run keeps oneDNN out (LeakSanitizer's thread
  // tracer crashes on the module's TLS at exit).
  if (const char *e = std::getenv("TCC_CPU_CONV");
      e && !std::strcmp(e, "im2col"))
    GTEST_SKIP() << "TCC_CPU_CONV=im2col";
  PathGuard guard;
  const ConvCase &g = GetParam();
  cpu::setCnnPath(cpu::CnnPath::Reference);
  long before = cpu::oneDnnCalls();
  auto want = runConv(g);
  EXPECT_EQ(cpu::oneDnnCalls(), before);
  cpu::setCnnPath(cpu::CnnPath::OneDnn);
  auto got = runConv(g);
  EXPECT_EQ(cpu::oneDnnCalls(), before + 4) << "oneDNN did not take " << g.name;
  const char *what[] = {"y", "y without bias", "dx", "dw"};
  for (int i = 0; i < 4; ++i)
    expectNear(got[i], want[i], 1e-5, std::string(g.name) + " " + what[i]);
  // A second run reuses the cached primitives and gives the same bits.
  auto again = runConv(g);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(again[i], got[i]) << g.name << " " << what[i];
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, OneDnnConv,
    ::testing::Values(
        // name           n  c   h  w  o  kh kw sh sw pt pl pb pr dh dw g
        ConvCase{"same3x3", 2, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
        ConvCase{"stride2", 3, 5, 9, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},
        ConvCase{"stem7x7", 2, 3, 17, 15, 8, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1},
        ConvCase{"pointwise", 2, 24, 5, 5, 40, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1},
        ConvCase{"1x1down", 4, 8, 6, 6, 16, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1},
        ConvCase{"depthwise", 2, 12, 7, 7, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1,
                 12},
        ConvCase{"groups", 2, 8, 6, 5, 12, 3, 2, 1, 2, 1, 0, 2, 1, 1, 1, 4},
        ConvCase{"dilated", 1, 4, 9, 9, 5, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1},
        ConvCase{"asymmetric", 2, 6, 7, 6, 6, 3, 2, 2, 1, 1, 0, 2, 1, 1, 2, 2},
        ConvCase{"tiny1x1map", 3, 20, 1, 1, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1,
                 1}),
    [](const ::testing::TestParamInfo<ConvCase> &info) {
      return std::string(info.param.name);
    });

} // namespace

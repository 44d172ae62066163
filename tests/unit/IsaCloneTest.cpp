//===- IsaCloneTest.cpp - AVX-512 loops give the baseline's bits ----------===//
//
// The runtime's hot loops run an AVX-512 wrapper where the CPU has it and
// a baseline one elsewhere (runtime/cpu/IsaClone.h). Both must give the
// same bits: the kernel cases of the cut cross-entropy, batch norm and
// pooling (and a cut cross-entropy wide enough for full vectors and
// several vocabulary blocks) are run both ways on this CPU and compared
// byte for byte. Skipped on a CPU without AVX-512, where only the baseline
// runs.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/IsaClone.h"
#include "KernelCases.h"

#include <gtest/gtest.h>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {
/// Every tensor's bytes after `p` ran with the AVX-512 loops on or off.
std::vector<std::vector<uint8_t>> runWith(const OneProgram &p, bool avx512) {
  kernels::setAvx512Loops(avx512);
  std::vector<std::vector<uint8_t>> out = p.runCpu();
  kernels::setAvx512Loops(true);
  return out;
}

void expectSameBits(const OneProgram &p, const std::string &what) {
  std::vector<std::vector<uint8_t>> wide = runWith(p, true),
                                    base = runWith(p, false);
  ASSERT_EQ(wide.size(), base.size());
  for (size_t id = 0; id < wide.size(); ++id)
    EXPECT_EQ(wide[id], base[id])
        << what << ": tensor " << p.info(static_cast<int32_t>(id)).name;
}
} // namespace

TEST(IsaClones, KernelCasesGiveTheBaselineBits) {
  if (!kernels::avx512Cpu())
    GTEST_SKIP() << "no AVX-512 here: only the baseline loops run";
  for (const char *name : {"linear_cross_entropy", "batch_norm", "pooling"})
    expectSameBits(kernelCase(name).prog, name);
}

TEST(IsaClones, WideCutCrossEntropy) {
  if (!kernels::avx512Cpu())
    GTEST_SKIP() << "no AVX-512 here: only the baseline loops run";
  OneProgram p;
  const int64_t rows = 96, d = 24, v = 300;
  int32_t hidden = p.random(DType::F32, {rows, d}, -2, 2);
  int32_t w = p.random(DType::F32, {v, d});
  int32_t bias = p.random(DType::F32, {v});
  std::vector<int64_t> labels(rows);
  for (int64_t r = 0; r < rows; ++r)
    labels[r] = r % 7 == 3 ? -100 : (r * 37) % v;
  int32_t lab = p.i64({rows}, labels);
  int32_t dloss = p.floats(DType::F32, {}, {0.5f});
  int32_t loss = p.out(DType::F32, {}), lse = p.out(DType::F32, {rows});
  // Blocks of 128 columns: two full, one partial; label smoothing on.
  p.instr("linear_cross_entropy", {hidden, w, lab, bias}, {loss, lse},
          {1, -100, 128}, {0.1});
  p.instr("linear_cross_entropy_grad", {dloss, hidden, w, lab, lse, bias},
          {p.out(DType::F32, {rows, d}), p.out(DType::F32, {v, d}),
           p.out(DType::F32, {v})},
          {1, -100, 128}, {0.1});
  expectSameBits(p, "wide linear_cross_entropy");
}

//===- DropoutRanksTest.cpp - Dropout's masks across data-parallel ranks --===//
//
// Data-parallel rank r numbers the n elements of a dropout op from r * n
// (KernelArgs::rank, set from SessionOptions::rank): the ranks' masks side
// by side are the mask one process draws for the tensor of N * B rows, so an
// N-rank run equals the one-process run at N * B with dropout too. Checked
// on the CPU kernel (f32 and through the 16-bit adapter) and through CPU
// sessions, eager and compiled; the CUDA kernel's offset is checked against
// these in CudaKernelEmuTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "OneProgram.h"

#include <cstring>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

constexpr int64_t kSeed = 77, kStep = 9;
constexpr double kRatio = 0.4;

/// dropout(x, step) with x's bytes given, y and mask of x's dtype.
struct DropoutProgram {
  OneProgram p;
  int32_t x, y, mask;
  DropoutProgram(DType t, std::vector<int64_t> shape,
                 const std::vector<uint8_t> &xBytes) {
    x = p.tensor(t, shape, xBytes);
    int32_t step = p.i64({}, {kStep});
    y = p.out(t, shape);
    mask = p.out(t, shape);
    p.instr("dropout", {x, step}, {y, mask}, {kSeed}, {kRatio});
  }
  /// Every tensor's bytes after the kernel ran as rank `rank`.
  std::vector<std::vector<uint8_t>> runKernelAs(int64_t rank) const {
    std::vector<std::vector<uint8_t>> store = p.initial();
    std::vector<void *> buffers;
    for (auto &s : store)
      buffers.push_back(s.data());
    const Artifact &a = p.artifact();
    for (const Instr &in : a.programs[0].instrs)
      runKernel(in, a.tensors, buffers, rank);
    return store;
  }
};

/// Bytes [part * size, (part + 1) * size) of `bytes`.
std::vector<uint8_t> part(const std::vector<uint8_t> &bytes, int64_t i,
                          size_t size) {
  return std::vector<uint8_t>(bytes.begin() + i * size,
                              bytes.begin() + (i + 1) * size);
}

/// One process at N * B rows, then each of N ranks at its B rows through
/// `run` (the rank's program and rank): its y and mask are the rows'
/// slices of the one-process y and mask, bit for bit.
template <class Run> void ranksEqualOneProcess(DType t, Run run) {
  const int64_t N = 3, B = 2, C = 37;
  OneProgram source;
  int32_t xs = source.random(t, {N * B, C});
  std::vector<uint8_t> all = source.initial()[xs];
  all.resize(static_cast<size_t>(source.info(xs).byteSize()));
  DropoutProgram whole(t, {N * B, C}, all);
  std::vector<std::vector<uint8_t>> one = whole.runKernelAs(0);
  const size_t rows = static_cast<size_t>(B * C) * dtypeSize(t);
  int64_t dropped = 0;
  for (int64_t r = 0; r < N; ++r) {
    DropoutProgram rank(t, {B, C}, part(all, r, rows));
    std::vector<std::vector<uint8_t>> got = run(rank, r);
    SCOPED_TRACE("rank " + std::to_string(r));
    std::vector<uint8_t> y = got[rank.y], mask = got[rank.mask];
    y.resize(rows);
    mask.resize(rows);
    EXPECT_EQ(y, part(one[whole.y], r, rows));
    EXPECT_EQ(mask, part(one[whole.mask], r, rows));
    for (size_t i = 0; i < rows; i += dtypeSize(t))
      dropped += std::all_of(mask.begin() + i, mask.begin() + i + dtypeSize(t),
                             [](uint8_t b) { return b == 0; });
  }
  // Not a vacuous match: some elements dropped, most kept.
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, N * B * C);
}

} // namespace

TEST(DropoutRanks, KernelNumbersRankRFromRTimesN) {
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtypeName(t));
    ranksEqualOneProcess(
        t, [](const DropoutProgram &d, int64_t r) { return d.runKernelAs(r); });
  }
}

TEST(DropoutRanks, SessionsRunAsTheirRank) {
  for (ExecMode mode : {ExecMode::Compiled, ExecMode::Eager}) {
    SCOPED_TRACE(mode == ExecMode::Eager ? "eager" : "compiled");
    ranksEqualOneProcess(DType::F32, [&](const DropoutProgram &d, int64_t r) {
      SessionOptions o;
      o.rank = r;
      return d.p.runOn("cpu", mode, o);
    });
  }
}

// Before the offset every rank drew rank 0's mask; now two ranks' masks are
// independent draws: they agree on about half the elements at ratio 0.5.
TEST(DropoutRanks, RanksDrawIndependentMasks) {
  const int64_t n = 8192;
  OneProgram p;
  int32_t x = p.floats(DType::F32, {n}, std::vector<float>(n, 1.0f));
  int32_t step = p.i64({}, {3});
  int32_t y = p.out(DType::F32, {n}), mask = p.out(DType::F32, {n});
  p.instr("dropout", {x, step}, {y, mask}, {5}, {0.5});
  std::vector<float> masks[2];
  for (int64_t r = 0; r < 2; ++r) {
    SessionOptions o;
    o.rank = r;
    std::vector<uint8_t> bytes = p.runOn("cpu", ExecMode::Compiled, o)[mask];
    masks[r].resize(n);
    std::memcpy(masks[r].data(), bytes.data(), n * sizeof(float));
  }
  int64_t same = 0;
  for (int64_t i = 0; i < n; ++i)
    same += masks[0][i] == masks[1][i];
  EXPECT_NEAR(double(same) / n, 0.5, 0.03);
}

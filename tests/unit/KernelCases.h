//===- KernelCases.h - The conformance cases of every kernel --------------===//
//
// Small programs over random state tensors, one list per kind of kernel
// (KernelCases*.h), gathered by allKernelCases(). They run in three places:
// through every registered backend's Session in both modes
// (ConformanceTest.cpp), and on the CUDA kernels compiled for the CPU
// (CudaKernelEmuTest.cpp). Each compares its listed outputs with the CPU
// kernels (OneProgram::runCpu): data movement, casts and dropout masks bit
// for bit, arithmetic within a tolerance for the math functions' last bits,
// the order of reductions and 16-bit rounding. KernelCases.CoverEveryKernel
// fails for a kernel of KernelList.def that no case calls, so a new kernel
// comes with its cross-backend check.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASES_H
#define TCC_TESTS_UNIT_KERNELCASES_H

#include "OneProgram.h"

#include "runtime/core/abi/KernelAbi.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace tcc::rt::test {

/// How the CUDA tiled attention copies its tiles for a case
/// (TCC_CUDA_ATTENTION_COPY): cp.async by every thread or tensor copies.
/// CudaTestUtil.h's CaseScope applies it; other backends have no such
/// choice.
enum class AttentionCopies { Environment, Async, Tma };
/// How it multiplies them (TCC_CUDA_ATTENTION_MMA): mma.sync or wgmma.
enum class AttentionProducts { Environment, Sync, Wgmma };

struct KernelCase {
  explicit KernelCase(std::string n) : name(std::move(n)) {}
  std::string name;
  OneProgram prog;
  std::vector<int32_t> outs;
  double rtol = -1, atol = -1; // < 0: by each output's dtype
  /// Outputs that are f32 sums of many 16-bit values (attention_grad's
  /// column sums): the GPU's and the CPU's 16-bit terms each differ by
  /// their roundings, so the sums differ by about sqrt(rows) of those.
  std::vector<int32_t> sumsOf16Bit;
  /// The CUDA tiled attention kernels' rows per warp for this case (16 or
  /// 32, as TCC_CUDA_ATTENTION_WARP_ROWS), 0: the environment's.
  int attentionWarpRows = 0;
  /// And how they copy tiles.
  AttentionCopies attentionCopies = AttentionCopies::Environment;
  /// And how they multiply them.
  AttentionProducts attentionProducts = AttentionProducts::Environment;
};

inline double rtolFor(DType t) {
  return t == DType::BF16 ? 1e-2 : t == DType::F16 ? 2e-3 : 2e-5;
}
inline double atolFor(DType t) {
  return t == DType::BF16 ? 1e-2 : t == DType::F16 ? 2e-3 : 1e-5;
}

/// Compares the case's outputs in `got` with the reference `cpu` (the CPU
/// kernels' results, runCpu) within the case's tolerances.
inline void compareCase(const KernelCase &c,
                        const std::vector<std::vector<uint8_t>> &cpu,
                        const std::vector<std::vector<uint8_t>> &got) {
  for (int32_t id : c.outs) {
    DType t = c.prog.info(id).dtype;
    if (std::find(c.sumsOf16Bit.begin(), c.sumsOf16Bit.end(), id) !=
        c.sumsOf16Bit.end())
      expectClose(c.prog, cpu, got, id, 1e-2, 3e-2);
    else
      expectClose(c.prog, cpu, got, id, c.rtol >= 0 ? c.rtol : rtolFor(t),
                  c.atol >= 0 ? c.atol : atolFor(t));
  }
}

/// Compares the case's outputs in `got` with the CPU kernels' results.
inline void compareCase(const KernelCase &c,
                        const std::vector<std::vector<uint8_t>> &got) {
  compareCase(c, c.prog.runCpu(), got);
}

/// Expects the case's outputs in `got` to be `cpu`'s bit for bit (a
/// backend that runs the CPU's kernels: only the session around them
/// differs), naming the first differing byte of each.
inline void expectSameBits(const KernelCase &c,
                           const std::vector<std::vector<uint8_t>> &cpu,
                           const std::vector<std::vector<uint8_t>> &got) {
  for (int32_t id : c.outs) {
    const TensorInfo &t = c.prog.info(id);
    size_t n = static_cast<size_t>(t.byteSize());
    ASSERT_GE(got[id].size(), n) << "tensor " << t.name << " not downloaded";
    auto diff =
        std::mismatch(cpu[id].begin(), cpu[id].begin() + n, got[id].begin());
    EXPECT_TRUE(diff.first == cpu[id].begin() + n)
        << "tensor " << t.name << " " << formatShape(t.shape)
        << " differs from the CPU kernels' at byte "
        << (diff.first - cpu[id].begin()) << " of " << n;
  }
}

/// The kernels the case's programs call.
inline std::set<abi::KernelId> kernelsOf(const KernelCase &c) {
  std::set<abi::KernelId> ids;
  for (const Program &p : c.prog.artifact().programs)
    for (const Instr &in : p.instrs)
      if (auto id = abi::kernelByName(in.kernel))
        ids.insert(*id);
  return ids;
}

/// Every case of every kind (KernelCases.cpp), built once per process.
const std::vector<KernelCase> &allKernelCases();
/// The case named `name`; an Error when there is none.
const KernelCase &kernelCase(const std::string &name);
/// The case names, for parameterized tests.
std::vector<std::string> kernelCaseNames();

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASES_H

//===- CudaEmitter.h - The CUDA writer of a fused region ------*- C++ -*-===//
//
// Shared by CudaEmit.cpp (the element-wise mapping, signatures, the driver)
// and CudaEmitRows.cpp (the rows and block_rows mappings, their shared
// memory plans and fin kernels); see CudaEmit.cpp for the mappings.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_CODEGEN_CUDAEMITTER_H
#define TCC_COMPILER_CODEGEN_CUDAEMITTER_H

#include "compiler/codegen/FusedCodegenInternal.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tcc::fusedgen {
namespace rt = ::tcc::rt;

class CudaEmitter {
public:
  CudaEmitter(const KernelGraph &g, int arch)
      : g(g), op(g.op), C(std::to_string(g.d.cols)),
        R(std::to_string(g.d.rows)), rows(g.hasRowNodes()),
        wide(g.cudaRecomputes()), arch(arch),
        first(wide ? "threadIdx.x" : "lane"),
        leader(wide ? "threadIdx.x == 0" : "lane == 0"),
        sync(wide ? "__syncthreads()" : "__syncwarp()") {
    planShared();
    threads = threadsOf(g, pipelined);
    step = wide ? std::to_string(threads) : "32";
    // Column sums: each warp's float sums of its rows of the slice.
    if (g.colSums && !wide)
      smemBytes = threads / 32 * g.colSums * g.d.cols * 4;
    planPrefetch();
    planGroups();
  }
  LogicalResult emit(std::string &code, rt::DeviceKernel &k);

private:
  /// Whether node `n` is computed in the column loop of odd slot `t`: a
  /// vector expression, or a column sum's addition.
  static bool inLoop(const Node &n, int t);
  /// The nodes a template reads, through `$0`.. (in order, with repeats).
  static SmallVector<int> templateArgs(const Node &n);
  /// The C type of a pointer operand of this element type.
  static const char *cudaType(Type t);
  std::string ref(int n, int loopTime) const;
  std::string element(const Node &x, int n, StringRef col) const;
  std::string load(int n, StringRef col) const;
  std::string define(int n, const std::string &value) const;
  std::string stored(int n) const;
  /// Stores column j of node `n`'s output: to `os`, or, for an output
  /// written in place over an input, to `deferred`, which the caller emits
  /// after everything else that reads the input at j.
  void store(std::ostream &os, std::string &deferred, int n,
             StringRef indent) const;
  std::string subst(const Node &n, int loopTime) const;
  std::string vecIndex(int n, StringRef col, StringRef slot = "tcc_k") const;
  std::string recompute(int n, StringRef col) const;
  /// Opens a loop over the lane's columns; `arrays`: its body indexes a
  /// per-lane array (s<N>, tcc_p<N>) by the slot, so it must be unrolled.
  std::string columnLoop(StringRef indent, bool arrays) const;
  /// A block_rows column loop: `body(grouped)` is the text for column j
  /// (grouped: inside a group of 8, where staged rows are read from the
  /// group's vectors); `groupInit` / `groupFini` open and close a group
  /// (where grouped stores land). See planGroups.
  void emitWideLoop(std::ostream &os, StringRef indent,
                    const std::function<std::string(bool)> &body,
                    StringRef groupInit, StringRef groupFini) const;
  /// Whether output k of a grouped kernel is stored 8 columns at once.
  bool groupStores(int k) const;
  void planGroups();
  /// Whether the column loop of odd slot `t` indexes a per-lane array.
  bool loopUsesArrays(int t) const;
  /// `bound`: the launch bound of a column-sum fin (else the kernel's).
  void signature(std::ostream &os, const std::string &symbol,
                 int64_t bound = 0) const;
  void emitElements(std::ostream &os) const;
  void emitRows(std::ostream &os) const;
  void emitRowScalar(std::ostream &os, int i) const;
  void emitFin(std::ostream &os) const;
  void emitColFin(std::ostream &os) const;
  void emitStaging(std::ostream &os) const;
  /// A strided kernel's copies of row `row` (an expression) into half
  /// `half` of the double buffer, by thread 0 (planPipeline).
  std::string bulkCopies(const std::string &row, const std::string &half) const;
  void planShared();
  /// Whether the staged rows can be double-buffered and copied by the copy
  /// engine (sm_90), and the shared memory of that.
  void planPipeline(int64_t stagedBytes, int64_t redBytes);
  void planPrefetch();
  /// Threads per block: 256 (elements), 128 (rows: 4 warps, a row each) or,
  /// for block_rows, enough that each thread has 16 or more columns, from
  /// 128 to 512 (two 512-thread blocks of a vocabulary's staged row fit a
  /// multiprocessor), or to 1024 when the rows are double-buffered (one
  /// such block of a vocabulary's rows fits a multiprocessor: the same 32
  /// warps and 64 registers a thread).
  static int64_t threadsOf(const KernelGraph &g, bool pipelined) {
    if (!g.hasRowNodes())
      return 256;
    if (!g.cudaRecomputes())
      return 128;
    int64_t t = (g.d.cols / 16 + 31) / 32 * 32;
    return std::clamp<int64_t>(t, 128, pipelined ? 1024 : 512);
  }
  /// Bytes of shared memory a block_rows kernel may take, staged rows and
  /// reduction slots together: 99 KiB, what every GPU of compute
  /// capability 8.0 or later gives a block (8.6 and 8.9 give no more), so
  /// an artifact loads on all of them. GPT-2's bf16 logits row (50257
  /// words, 98.2 KiB) fits; an H100 holds two such blocks.
  static constexpr int64_t kSmemBudget = 99 * 1024;
  /// A double-buffered kernel's (sm_90 only): what a block of an H100 may
  /// take (rt::kMaxKernelSmem, 227 KiB), and what a multiprocessor has for
  /// its blocks, each of which also takes 1 KiB of the system's.
  static constexpr int64_t kSmemBudgetSm90 = rt::kMaxKernelSmem;
  static constexpr int64_t kSmemPerSm90 = 228 * 1024;
  /// Reduction slots per reduction (one double per warp, up to 32 warps).
  static constexpr int64_t kRedSlots = 32;

  const KernelGraph &g;
  mutable FusedOp op; // a handle; its accessors are not const
  std::string C, R;
  bool rows;
  bool wide; // rows too wide for per-lane arrays: recompute instead, and
             // a block per row (block_rows)
  int arch;  // the target's compute capability (90 for sm_90a), 0: any
  int64_t threads = 0;
  /// block_rows on sm_90 (planPipeline): a grid of gridPerSm blocks a
  /// multiprocessor strides over the rows; the staged rows are two halves
  /// `half` bytes apart, filled by bulk copies of `copyBytes` (per staged
  /// node; `copyTotal` in all) counted on the two mbarriers at `barOffset`.
  bool pipelined = false;
  int64_t half = 0, barOffset = 0, gridPerSm = 0, copyTotal = 0;
  std::vector<int64_t> copyBytes;
  // block_rows vs rows: a thread's first column and the column step, the
  // thread that writes row results, the barrier before reading other
  // threads' writes.
  std::string first, step, leader, sync;
  /// Per node: the byte offset of its row in shared memory (a staged vector
  /// Load of a block_rows kernel), else -1; per Reduce node its 32 slots
  /// of reduction scratch (`tcc_red + 32 * slot`).
  std::vector<int64_t> staged;
  std::vector<int> redSlot;
  /// Per odd time slot of a rows kernel whose column loop stores: the
  /// vector Load nodes its expressions read, which a loop ahead of it loads
  /// into the per-lane arrays tcc_p<N> (emitRows).
  std::map<int, std::set<int>> prefetch;
  int64_t redOffset = 0, smemBytes = 0;
  /// block_rows: whether the column loops take 8 consecutive columns a
  /// step (planGroups); while one's grouped body is written, `inGroup` is
  /// set and the staged rows it reads collect in `groupLoads`.
  bool grouped = false;
  mutable bool inGroup = false;
  mutable std::set<int> groupLoads;
};

} // namespace tcc::fusedgen

#endif // TCC_COMPILER_CODEGEN_CUDAEMITTER_H

//===- CudaEmit.cpp - Writing one region's node graph as CUDA C -----------===//
//
// The graph is the one FusedCodegen.cpp builds for the host library (see
// there); only the mapping onto threads differs:
//  - "elements" (no reduction, pick or partial in the graph): one thread per
//    element of the rows x cols domain, a grid-stride loop over them. Every
//    node is a local of the thread; row scalars and broadcast offsets are
//    recomputed per element, so threads never need to communicate.
//  - "rows": one warp per row. Even time slots are straight-line code that
//    all 32 lanes run alike (so every lane holds every row scalar); odd slots
//    are loops over the lane's columns j = lane + 32 k, k < ceil(C / 32).
//    A vector that a later slot reads lives in a per-thread array s<N>[k]:
//    lane l only ever touches its own columns l, l + 32, ..., so no lane
//    reads another's entries except through a shuffle. k is a constant
//    trip count, and every loop that indexes such an array is unrolled
//    (as are all loops of short rows), so those arrays stay in registers;
//    a pick (a label's column) takes every slot through a shuffle and keeps
//    the label's, since reading the array at the label would put it in
//    local memory.
//    An odd slot's loop that stores is preceded by one that loads the
//    inputs it reads into per-lane arrays tcc_p<N>, so that a lane's loads
//    are all in flight before its first store (planPrefetch). Rows wider
//    than kMaxLaneSlots * 32 columns (a vocabulary's logits) keep no
//    arrays: a later slot recomputes such a vector from the inputs (or
//    reads it back from its output), since an array of C / 32
//    floats per thread would be local memory that the driver reserves for
//    every resident thread (50257 columns: 6 KiB a thread, ~1.7 GB on an
//    H100) and that costs more traffic than reading the inputs again.
//    Reductions: each lane in column order, then a fixed butterfly
//    (prelude), so results are deterministic.
//  - "block_rows": those wide rows get a block of threads each, as "rows"
//    gives a warp: thread t's columns are t, t + B, ...; reductions add
//    the warps' butterflies in warp order through shared memory. The row's
//    vector inputs are first copied to shared memory (16-byte loads, while
//    they fit kSmemBudget), so that every later pass over the row reads
//    them on chip: the logits come from DRAM once instead of once per pass
//    (a warp per row had 8000+ rows in flight, far more than L2 holds).
//    Outputs written over a staged input (in_place) are then safe too.
// Padded outputs (a last-axis zero pad, KernelGraph::outPad) have rows of
// cols + pad elements; "elements" threads of columns j < pad also zero
// column cols + j, "rows" lanes zero the pad columns of their row.
// Per-row partials (losses) are written by lane 0; the `_fin` kernel sums
// them in row order as the host library's fin does. bf16/f16 operands are
// unsigned short words, converted and rounded as in the host library
// (Node::half).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedCodegenInternal.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

using namespace ::tcc::fusedgen;
namespace rt = ::tcc::rt;

/// The shared templates are C++; NVRTC has no <cmath> and no GCC builtins.
static std::string toCuda(std::string s) {
  auto replaceAll = [&](StringRef from, StringRef to) {
    for (size_t pos = 0; (pos = s.find(from.str(), pos)) != std::string::npos;
         pos += to.size())
      s.replace(pos, from.size(), to.str());
  };
  replaceAll("std::", "tccm::");
  replaceAll("__builtin_nanf(\"\")", "tccm::nan_f()");
  replaceAll("__builtin_inff()", "tccm::inf_f()");
  replaceAll("int64_t", "long long");
  return s;
}

namespace {
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
} // namespace

/// Element `col` of a vector node that lives in memory (rows mapping);
/// `slot` is col / 32, the entry of the lane's array. A node with both reads
/// its float copy in the lane's array (a 16-bit output's words are only
/// written).
std::string CudaEmitter::vecIndex(int n, StringRef col, StringRef slot) const {
  const Node &x = g.nodes[n];
  if (x.kind == NodeKind::Load)
    return element(x, n, col);
  if (wide)
    return recompute(n, col);
  if (x.scratch >= 0)
    return "s" + std::to_string(x.scratch) + "[" + slot.str() + "]";
  return "out" + std::to_string(x.output) + "[r * " +
         std::to_string(g.outStride(x.output)) + " + " + col.str() + "]";
}

/// The f32 value of vector node `n` at column `col` in a wide rows kernel,
/// where no lane keeps it: read back from its output when it has one (the
/// same bits: a 16-bit node's value is its stored word widened), else its
/// expression again over its arguments' values at `col`. Same expression,
/// same rounding (no contraction), so the same bits as when it was defined.
std::string CudaEmitter::recompute(int n, StringRef col) const {
  const Node &x = g.nodes[n];
  if (x.kind == NodeKind::Const)
    return x.tmpl;
  if (!x.vec)
    return "v" + std::to_string(n);
  if (x.kind == NodeKind::Load)
    return load(n, col);
  if (x.output >= 0) {
    std::string e = "out" + std::to_string(x.output) + "[r * " +
                    std::to_string(g.outStride(x.output)) + " + " + col.str() +
                    "]";
    return x.half == Half::None ? e : widenFn(x.half) + "(" + e + ")";
  }
  std::string e;
  const std::string &t = x.tmpl;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '$' && i + 1 < t.size() && t[i + 1] == 'j') {
      e += "(" + col.str() + ")";
      ++i;
    } else if (t[i] == '$' && i + 1 < t.size() && isdigit(t[i + 1])) {
      e += recompute(x.args[t[i + 1] - '0'], col);
      ++i;
    } else {
      e += t[i];
    }
  }
  if (x.half != Half::None)
    e = widenFn(x.half) + "(" + narrowFn(x.half) + "(" + e + "))";
  return "(" + e + ")";
}

/// Column `col` of the row of vector Load node `x` (index n) as stored:
/// from its staged copy in shared memory, or from the input.
std::string CudaEmitter::element(const Node &x, int n, StringRef col) const {
  if (staged[n] >= 0 && inGroup && col == "j") {
    groupLoads.insert(n);
    std::string w = "tcc_w" + std::to_string(n);
    return x.half == Half::None ? "tcc_f8(" + w + "a, " + w + "b, tcc_e)"
                                : "tcc_h8(" + w + ", tcc_e)";
  }
  if (staged[n] >= 0)
    return "tcc_st" + std::to_string(n) + "[" + col.str() + "]";
  return "in" + std::to_string(x.input) + "[" + x.tmpl + " + " + col.str() +
         "]";
}

/// The f32 value of Load node `n` at column `col` (a vector) or of its one
/// element (a row scalar: `col` empty).
std::string CudaEmitter::load(int n, StringRef col) const {
  const Node &x = g.nodes[n];
  std::string e = x.vec ? element(x, n, col)
                        : "in" + std::to_string(x.input) + "[" + x.tmpl + "]";
  return x.half == Half::None ? e : widenFn(x.half) + "(" + e + ")";
}

/// `const float v<N> = value;`, rounded through the word h<N> when 16-bit.
std::string CudaEmitter::define(int n, const std::string &value) const {
  const Node &x = g.nodes[n];
  std::string id = std::to_string(n);
  if (x.half == Half::None)
    return "const float v" + id + " = " + value + ";";
  return "const unsigned short h" + id + " = " + narrowFn(x.half) + "(" +
         value + "); const float v" + id + " = " + widenFn(x.half) + "(h" + id +
         ");";
}

std::string CudaEmitter::stored(int n) const {
  return (g.nodes[n].half == Half::None ? "v" : "h") + std::to_string(n);
}

void CudaEmitter::store(std::ostream &os, std::string &deferred, int n,
                        StringRef indent) const {
  int k = g.nodes[n].output;
  // Stored with its group, after every read of the group's columns.
  if (inGroup && groupStores(k)) {
    os << indent.str() << "tcc_o" << k << "[tcc_e] = " << stored(n) << ";\n";
    return;
  }
  std::string line = indent.str() + "out" + std::to_string(k) + "[r * " +
                     std::to_string(g.outStride(k)) + " + j] = " + stored(n) +
                     ";\n";
  if (g.writesInPlace(k))
    deferred += line;
  else
    os << line;
}

/// Opens a loop over the lane's columns: `j` the column, `tcc_k` its slot.
/// A loop whose body indexes a per-lane array is fully unrolled (at most
/// kMaxLaneSlots steps), so that every index is a constant: an array indexed
/// by a loop counter is local memory. Other loops are unrolled for short
/// rows only.
std::string CudaEmitter::columnLoop(StringRef indent, bool arrays) const {
  if (wide) // no per-thread arrays: the column is all a body needs
    return indent.str() + "#pragma unroll 4\n" + indent.str() +
           "for (int j = " + first + "; j < " + C + "; j += " + step + ") {\n";
  int64_t slots = (g.d.cols + 31) / 32;
  std::string s = indent.str();
  s += slots <= 16 || arrays ? "#pragma unroll\n" + indent.str() : "";
  s += "for (int tcc_k = 0; tcc_k < " + std::to_string(slots) +
       "; ++tcc_k) {\n" + indent.str() + "  const int j = lane + 32 * tcc_k;\n";
  if (g.d.cols % 32)
    s += indent.str() + "  if (j >= " + C + ")\n" + indent.str() +
         "    break;\n";
  return s;
}

/// block_rows kernels whose vector inputs are all staged take their
/// columns in groups of 8: thread t has columns 8 q .. 8 q + 7 for q = t,
/// t + B, ... (then, when C is not a multiple of 8, thread t has column
/// 8 (C / 8) + t). A group reads each staged row as one or two 16-byte
/// shared loads and writes each output whose rows are 16-byte multiples
/// with 16-byte stores (tcc_st8); a sum of exponentials adds the group's
/// floats first. Every loop of the kernel maps columns the same way, so a
/// thread still reads back only what it wrote.
///
/// Why: GPT-2's loss (32768 rows x 50257 bf16 logits) was issue-bound:
/// per column a shared
/// load in each of three passes, a global store, and a conversion to
/// double, each an instruction; a group issues one load and one store per
/// 8 columns, and one conversion.
void CudaEmitter::planGroups() {
  if (!wide || g.d.cols < 8)
    return;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node &n = g.nodes[i];
    if (n.kind == NodeKind::Load && n.vec && staged[i] < 0)
      return; // read from global memory, where columns t, t + B coalesce
  }
  grouped = true;
}

bool CudaEmitter::groupStores(int k) const {
  Type e = cast<ShapedType>(op.getResults()[k].getType()).getElementType();
  int64_t bytes = e.isF32() ? 4 : e.isBF16() || e.isF16() ? 2 : 0;
  return grouped && bytes && g.outStride(k) * bytes % 16 == 0;
}

void CudaEmitter::emitWideLoop(std::ostream &os, StringRef indent,
                               const std::function<std::string(bool)> &body,
                               StringRef groupInit, StringRef groupFini) const {
  std::string in = indent.str();
  // A body's later lines come indented for a loop at `indent`.
  auto at = [&](std::string b, const std::string &by) {
    for (size_t p = 0; (p = b.find("\n" + in + "  ", p)) != std::string::npos;
         p += by.size() + 1)
      b.replace(p, in.size() + 3, "\n" + by);
    return b;
  };
  if (!grouped) {
    os << columnLoop(in, false) << in << "  " << body(false) << "\n"
       << in << "}\n";
    return;
  }
  const int64_t groups = g.d.cols / 8;
  inGroup = true;
  groupLoads.clear();
  std::string b = at(body(true), in + "    ");
  inGroup = false;
  os << in << "for (int tcc_q = " << first << "; tcc_q < " << groups
     << "; tcc_q += " << step << ") {\n";
  for (int n : groupLoads) {
    std::string w = "tcc_w" + std::to_string(n),
                st = "tcc_st" + std::to_string(n) + " + tcc_q * 8";
    if (g.nodes[n].half == Half::None)
      os << in << "  const uint4 " << w << "a = tcc_ld16(" << st << "), " << w
         << "b = tcc_ld16(" << st << " + 4);\n";
    else
      os << in << "  const uint4 " << w << " = tcc_ld16(" << st << ");\n";
  }
  if (!groupInit.empty())
    os << in << "  " << groupInit.str() << "\n";
  os << in << "  #pragma unroll\n"
     << in << "  for (int tcc_e = 0; tcc_e < 8; ++tcc_e) {\n"
     << in << "    const int j = tcc_q * 8 + tcc_e;\n"
     << in << "    " << b << "\n"
     << in << "  }\n";
  if (!groupFini.empty())
    os << in << "  " << groupFini.str() << "\n";
  os << in << "}\n";
  if (g.d.cols % 8)
    os << in << "if (" << first << " < " << g.d.cols % 8 << ") {\n"
       << in << "  const int j = " << groups * 8 << " + " << first << ";\n"
       << in << "  " << at(body(false), in + "  ") << "\n"
       << in << "}\n";
}

std::string CudaEmitter::ref(int n, int loopTime) const {
  const Node &x = g.nodes[n];
  if (x.kind == NodeKind::Const)
    return x.tmpl;
  std::string v = "v" + std::to_string(n);
  if (!rows || !x.vec)
    return v;
  if (x.kind != NodeKind::Load && x.time == loopTime)
    return v;
  if (x.kind == NodeKind::Load) {
    auto it = prefetch.find(loopTime);
    if (it != prefetch.end() && it->second.count(n))
      return "tcc_p" + std::to_string(n) + "[tcc_k]";
    return load(n, "j");
  }
  return vecIndex(n, "j");
}

/// Whether node `n` is computed in the column loop of odd slot `t`: a
/// vector expression, or a column sum's addition.
static bool inLoop(const Node &n, int t) {
  return n.vec && n.time == t &&
         (n.kind == NodeKind::Expr || n.kind == NodeKind::ColSum);
}

/// The nodes a template reads, through `$0`.. (in order, with repeats).
static SmallVector<int> templateArgs(const Node &n) {
  SmallVector<int> args;
  const std::string &t = n.tmpl;
  for (size_t i = 0; i + 1 < t.size(); ++i)
    if (t[i] == '$' && isdigit(t[i + 1]))
      args.push_back(n.args[t[++i] - '0']);
  return args;
}

bool CudaEmitter::loopUsesArrays(int t) const {
  if (wide)
    return false;
  if (prefetch.count(t))
    return true;
  for (const Node &n : g.nodes) {
    if (!inLoop(n, t))
      continue;
    if (n.scratch >= 0)
      return true;
    for (int a : templateArgs(n)) {
      const Node &x = g.nodes[a];
      if (x.vec && x.kind != NodeKind::Load && x.time != t && x.scratch >= 0)
        return true;
    }
  }
  return false;
}

std::string CudaEmitter::subst(const Node &n, int loopTime) const {
  std::string out;
  const std::string &t = n.tmpl;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '$' && i + 1 < t.size() && t[i + 1] == 'j') {
      out += "j";
      ++i;
    } else if (t[i] == '$' && i + 1 < t.size() && isdigit(t[i + 1])) {
      out += ref(n.args[t[i + 1] - '0'], loopTime);
      ++i;
    } else {
      out += t[i];
    }
  }
  return out;
}

/// The C type of a pointer operand of this element type.
static const char *cudaType(Type t) {
  Type e = cast<ShapedType>(t).getElementType();
  if (e.isF32())
    return "float";
  if (e.isBF16() || e.isF16())
    return "unsigned short";
  return "long long";
}

void CudaEmitter::signature(std::ostream &os, const std::string &symbol,
                            int64_t bound) const {
  // block_rows: registers for two blocks per multiprocessor (strided: for
  // the blocks a multiprocessor holds).
  os << "extern \"C\" __global__ void __launch_bounds__("
     << (bound ? bound : threads)
     << (bound       ? std::string()
         : pipelined ? ", " + std::to_string(gridPerSm)
         : wide      ? std::string(", 2")
                     : std::string())
     << ") " << symbol << "(";
  // The pointers of an in-place pair may be equal: not __restrict__.
  for (auto [k, v] : llvm::enumerate(op.getInputs()))
    os << "const " << cudaType(v.getType())
       << (g.readsInPlace((int)k) ? " *in" : " *__restrict__ in") << k << ", ";
  for (auto [k, v] : llvm::enumerate(op.getResults()))
    os << cudaType(v.getType())
       << (g.writesInPlace((int)k) ? " *out" : " *__restrict__ out") << k
       << ", ";
  os << "double *__restrict__ tcc_partials, long long *__restrict__ tcc_err)";
}

void CudaEmitter::emitElements(std::ostream &os) const {
  os << " {\n  (void)tcc_partials; (void)tcc_err;\n"
     << "  const long long tcc_n = " << g.d.numel() << "LL;\n"
     << "  for (long long tcc_i = (long long)blockIdx.x * blockDim.x + "
        "threadIdx.x; tcc_i < tcc_n;\n"
     << "       tcc_i += (long long)gridDim.x * blockDim.x) {\n"
     << "    const long long r = tcc_i / " << C << ", j = tcc_i - r * " << C
     << ";\n    (void)r; (void)j;\n";
  for (const ViewVar &v : g.views)
    os << v.code;
  // Index order is a topological order: every node after its arguments.
  // An in-place output is stored after every load of the element.
  std::string inPlaceStores;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node &n = g.nodes[i];
    std::string v = "v" + std::to_string(i);
    if (n.kind == NodeKind::Load)
      os << "    const " << (n.isInt ? "long long " : "float ") << v << " = "
         << load((int)i, "j") << ";\n";
    else if (n.kind == NodeKind::Expr)
      os << "    " << define((int)i, subst(n, -1)) << "\n";
    else
      continue;
    if (n.output >= 0)
      store(os, inPlaceStores, (int)i, "    ");
    for (auto [node, k] : g.rowStores)
      if (node == (int)i)
        os << "    if (j == 0)\n      out" << k << "[r] = " << stored((int)i)
           << ";\n";
  }
  os << inPlaceStores;
  // Padded outputs: the thread of column j < pad also zeroes column
  // cols + j of its row (pad <= cols, FusionModel.h), so every pad column
  // has a thread whatever the grid.
  for (size_t k = 0; k < g.outPad.size(); ++k)
    if (g.outPad[k])
      os << "    if (j < " << g.outPad[k] << ")\n      out" << k << "[r * "
         << g.outStride((int)k) << " + " << C << " + j] = 0;\n";
  os << "  }\n}\n";
}

/// A node of an even (straight-line) slot of a rows kernel.
void CudaEmitter::emitRowScalar(std::ostream &os, int i) const {
  const Node &n = g.nodes[i];
  std::string v = "v" + std::to_string(i);
  switch (n.kind) {
  case NodeKind::Load:
    if (n.checkLabel) {
      // The same value in every lane (thread): the whole warp (block)
      // leaves together. A label in range is a column, an int: compared
      // with j in one instruction instead of three.
      // An ignored row (tcc_ign<N>) takes label 0, a column picks may read.
      std::string l = "tcc_l" + std::to_string(i),
                  ign = "tcc_ign" + std::to_string(i);
      os << "    const long long " << l << " = " << load(i, "") << ";\n"
         << "    const bool " << ign << " = " << l << " == " << n.ignoreLabel
         << "LL;\n"
         << "    if (!" << ign << " && (" << l << " < 0 || " << l << " >= " << C
         << ")) {\n"
         << "      if (" << leader << ")\n        tcc_bad_label(tcc_err, r, "
         << l << ", " << C
         << ");\n"
         // A strided kernel's next row may be on its way: the block's
         // shared memory must outlive that copy.
         << (pipelined ? "      if (tcc_bulk && r + gridDim.x < " + R +
                             ")\n        tcc_mbar_wait(tcc_bar + (tcc_h ^ 1), "
                             "((tcc_it + 1) >> 1) & 1);\n"
                       : std::string())
         << "      return;\n    }\n"
         << "    const int " << v << " = " << ign << " ? 0 : static_cast<int>("
         << l << ");\n";
      break;
    }
    os << "    const " << (n.isInt ? "long long " : "float ") << v << " = "
       << load(i, "") << ";\n";
    break;
  case NodeKind::Expr:
    os << "    " << define(i, subst(n, -1)) << "\n";
    break;
  case NodeKind::Reduce: {
    const Node &arg = g.nodes[n.args[0]];
    // The combine across lanes, and for block_rows across warps.
    auto combine = [&](StringRef kind) {
      if (!wide)
        return "tcc_warp_" + kind.str() + "(" + v + ")";
      return "tcc_block_" + kind.str() + "(" + v + ", tcc_red + " +
             std::to_string(kRedSlots * redSlot[i]) + ")";
    };
    // The loop's body for column j: the argument's value there, x, into the
    // thread's accumulator v (in a group, sums of exponentials go through
    // the group's float sum: one conversion to double per 8 columns).
    std::function<std::string(bool)> body;
    std::string init, fini, type = "float", start = "0.0f", kind = "sum";
    if (n.tmpl == "sumexp_f64") {
      // As tcc_rowsumexp_f64 and the library's cross-entropy kernels: the
      // exponential in float, the sum in double.
      type = "double";
      start = "0.0";
      kind = "sum_f64";
      init = "float tcc_g = 0.0f;";
      fini = v + " += static_cast<double>(tcc_g);";
      body = [&](bool grouped) {
        std::string e = "tcc_exp_exact(" + vecIndex(n.args[0], "j") + " - " +
                        ref(n.args[1], -1) + ")";
        return grouped ? "tcc_g += " + e + ";"
                       : v + " += static_cast<double>(" + e + ");";
      };
    } else if (n.tmpl == "max") {
      start = "-tccm::inf_f()";
      kind = "max";
      body = [&](bool) {
        return "const float x = " + vecIndex(n.args[0], "j") + "; " + v +
               " = " + v + " < x ? x : " + v + ";";
      };
    } else {
      body = [&](bool) { return v + " += " + vecIndex(n.args[0], "j") + ";"; };
    }
    os << "    " << type << " " << v << " = " << start << ";\n";
    if (wide) {
      emitWideLoop(os, "    ", body, init, fini);
    } else {
      os << columnLoop("    ", arg.kind != NodeKind::Load && arg.scratch >= 0)
         << "      " << body(false) << "\n    }\n";
    }
    os << "    " << v << " = " << combine(kind) << ";\n";
    break;
  }
  case NodeKind::Pick: {
    // The index is a checked label (uniform across the warp). A vector in a
    // lane's local array is fetched from the lane that owns the column; one
    // in global memory was written by other lanes, hence the __syncwarp.
    const Node &x = g.nodes[n.args[0]];
    std::string idx = "(int)(" + ref(n.args[1], -1) + ")";
    if (x.kind == NodeKind::Load)
      os << "    const float " << v << " = " << vecIndex(n.args[0], idx)
         << ";\n";
    else if (wide) // every thread recomputes it (or reads it back) at idx
      os << "    " << sync << ";\n    const float " << v << " = "
         << vecIndex(n.args[0], idx) << ";\n";
    else if (x.scratch < 0) // in its output
      os << "    __syncwarp();\n    const float " << v << " = "
         << vecIndex(n.args[0], idx) << ";\n";
    else if ((g.d.cols + 31) / 32 > 16)
      // Every slot through a shuffle, the idx >> 5'th kept: an array read
      // at idx >> 5 (or a select over the slots, which the compiler turns
      // back into one) puts the whole array in local memory (a 1024-column
      // loss: a 128-byte stack frame); a shuffle per slot keeps it in
      // registers.
      os << "    float " << v << " = 0.0f;\n    #pragma unroll\n"
         << "    for (int tcc_k = 0; tcc_k < " << (g.d.cols + 31) / 32
         << "; ++tcc_k) {\n      const float tcc_t = __shfl_sync(0xffffffffu, "
         << vecIndex(n.args[0], "", "tcc_k") << ", " << idx << " & 31);\n      "
         << v << " = tcc_k == " << idx << " >> 5 ? tcc_t : " << v
         << ";\n    }\n";
    else // a constant index per unrolled step keeps the array in registers
      os << "    float " << v << " = 0.0f;\n    #pragma unroll\n"
         << "    for (int tcc_k = 0; tcc_k < " << (g.d.cols + 31) / 32
         << "; ++tcc_k)\n      " << v << " = tcc_k == " << idx << " >> 5 ? "
         << vecIndex(n.args[0], "", "tcc_k") << " : " << v << ";\n    " << v
         << " = __shfl_sync(0xffffffffu, " << v << ", " << idx << " & 31);\n";
    break;
  }
  case NodeKind::Partial:
    os << "    if (" << leader << ") {\n      " << subst(n, -1) << "\n    }\n";
    break;
  default:
    break;
  }
  for (auto [node, k] : g.rowStores)
    if (node == i)
      os << "    if (" << leader << ")\n      out" << k << "[r] = " << stored(i)
         << ";\n";
}

/// Where each staged row and the reduction slots of a block_rows kernel
/// live in its shared memory: vector Loads of float inputs in node order
/// while they fit kSmemBudget (the others are read from global memory at
/// every pass), 16-byte aligned; then 32 doubles per reduction.
void CudaEmitter::planShared() {
  staged.assign(g.nodes.size(), -1);
  redSlot.assign(g.nodes.size(), -1);
  if (!wide)
    return;
  int reductions = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].kind == NodeKind::Reduce)
      redSlot[i] = reductions++;
  const int64_t redBytes = reductions * kRedSlots * 8;
  const int64_t stageBudget = kSmemBudget - redBytes;
  int64_t at = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node &n = g.nodes[i];
    if (n.kind != NodeKind::Load || !n.vec || n.isInt)
      continue;
    int64_t bytes = g.d.cols * (n.half == Half::None ? 4 : 2);
    if (at + bytes > stageBudget)
      continue;
    staged[i] = at;
    at = (at + bytes + 15) / 16 * 16;
  }
  redOffset = at;
  smemBytes = at + redBytes;
  planPipeline(at, redBytes);
}

/// Every staged input must be a row of `rowScale` elements a row (or one
/// row for all) whose copy, rounded up to 16 bytes, stays inside the input
/// and starts 16-byte aligned (the base pointer is checked at run time);
/// and both halves must fit kSmemBudgetSm90. GPT-2's bf16 logits (50257
/// columns of rows 50304 apart): 2 x 100528 bytes. Why: a block per row
/// staged its row, then computed, so on a multiprocessor of two blocks
/// no loads were in flight while both computed, and the memory sat idle;
/// here the copy engine fetches the next row while the block computes
/// this one.
void CudaEmitter::planPipeline(int64_t stagedBytes, int64_t redBytes) {
  if (!wide || arch < 90 || stagedBytes == 0)
    return;
  copyBytes.assign(g.nodes.size(), 0);
  int64_t total = 0; // bytes copied a row
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (staged[i] < 0)
      continue;
    const Node &n = g.nodes[i];
    int64_t elem = n.half == Half::None ? 4 : 2;
    int64_t bytes = (g.d.cols * elem + 15) / 16 * 16;
    int64_t inputBytes =
        cast<ShapedType>(op.getInputs()[n.input].getType()).getNumElements() *
        elem;
    if (n.rowScale < 0 || n.rowScale * elem % 16 != 0 ||
        (g.d.rows - 1) * n.rowScale * elem + bytes > inputBytes)
      return;
    copyBytes[i] = bytes;
    total += bytes;
  }
  if (2 * stagedBytes + redBytes + 16 > kSmemBudgetSm90)
    return;
  pipelined = true;
  copyTotal = total;
  half = stagedBytes;
  redOffset = 2 * stagedBytes;
  barOffset = redOffset + redBytes;
  smemBytes = barOffset + 16; // two mbarriers
  // Blocks a multiprocessor: by shared memory, by threads (2048), at
  // least one.
  gridPerSm =
      std::max<int64_t>(1, std::min<int64_t>(kSmemPerSm90 / (smemBytes + 1024),
                                             2048 / threadsOf(g, true)));
}

/// The odd slots of a (non-wide) rows kernel whose column loop stores, and
/// the vector inputs each reads: a loop ahead of the stores loads them all
/// into per-lane arrays tcc_p<N>, the f32 (or integer) value load() gives,
/// and the storing loop reads those instead of global memory.
///
/// Why: GPT-2's layer norm (32768 rows x 768 bf16 columns, 24 slots a lane)
/// stalled mostly on global loads. Each iteration loaded
/// its columns and then stored; the pointers of an in-place pair are not
/// __restrict__ (an output may overwrite an input), so the compiler could
/// not move step k + 1's loads above step k's store and every step waited
/// a full DRAM latency. Loading first puts all of a lane's loads in flight
/// at once. It is legal for in-place pairs too: a lane reads and writes
/// only its own columns lane + 32 k, and every read of a column still comes
/// before that column's store. Loops that store nothing are left alone:
/// their loads already overlap.
void CudaEmitter::planPrefetch() {
  if (!rows || wide)
    return;
  for (int t = 1; t <= g.maxTime; t += 2) {
    bool stores = false;
    for (const Node &n : g.nodes)
      stores |=
          n.vec && n.time == t && n.kind == NodeKind::Expr && n.output >= 0;
    if (!stores)
      continue;
    std::set<int> loads;
    for (const Node &n : g.nodes) {
      if (!inLoop(n, t))
        continue;
      for (int a : templateArgs(n))
        if (g.nodes[a].kind == NodeKind::Load && g.nodes[a].vec)
          loads.insert(a);
    }
    if (!loads.empty())
      prefetch[t] = std::move(loads);
  }
}

/// The staged rows' copies at the top of a block_rows row, and the
/// barrier after which every thread may read any column of them.
void CudaEmitter::emitStaging(std::ostream &os) const {
  // The threads' copies, indented `in`, then the barrier.
  auto byThreads = [&](const std::string &in) {
    std::ostringstream s;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (staged[i] >= 0)
        s << in << "tcc_stage_row(tcc_st" << i << ", in" << g.nodes[i].input
          << " + " << g.nodes[i].tmpl << ", " << C << ");\n";
    return s.str() + in + "__syncthreads();\n";
  };
  if (std::all_of(staged.begin(), staged.end(),
                  [](int64_t s) { return s < 0; }))
    return;
  if (!pipelined) {
    os << byThreads("    ");
    return;
  }
  // Thread 0 starts the copies of this block's next row into the other
  // half; every thread waits for this row's.
  os << "    if (tcc_bulk) {\n      const long long tcc_rn = r + gridDim.x;\n"
     << "      if (threadIdx.x == 0 && tcc_rn < " << R << ") {\n"
     << bulkCopies("tcc_rn", "(tcc_h ^ 1)") << "      }\n"
     << "      tcc_mbar_wait(tcc_bar + tcc_h, (tcc_it >> 1) & 1);\n"
     << "    } else {\n"
     << byThreads("      ") << "    }\n";
}

std::string CudaEmitter::bulkCopies(const std::string &row,
                                    const std::string &which) const {
  std::ostringstream os;
  os << "        tcc_fence_proxy_async();\n"
     << "        tcc_mbar_expect(tcc_bar + " << which << ", " << copyTotal
     << "u);\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (staged[i] < 0)
      continue;
    const Node &n = g.nodes[i];
    os << "        tcc_bulk_copy(tcc_smem + " << staged[i] << " + " << which
       << " * " << half << ", in" << n.input;
    if (n.rowScale > 0)
      os << " + " << row << " * " << n.rowScale;
    os << ", " << copyBytes[i] << "u, tcc_bar + " << which << ");\n";
  }
  return os.str();
}

void CudaEmitter::emitRows(std::ostream &os) const {
  os << " {\n  (void)tcc_partials; (void)tcc_err;\n"
     << "  const int lane = threadIdx.x & 31;\n  (void)lane;\n";
  if (wide) {
    os << "  TCC_SMEM_BYTES(tcc_smem);\n  (void)tcc_smem;\n";
    // The staged rows: where they are, or (pipelined) in which half.
    std::ostringstream rowsAt;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (staged[i] < 0)
        continue;
      const char *type = cudaType(op.getInputs()[g.nodes[i].input].getType());
      rowsAt << (pipelined ? "    " : "  ") << type << " *const tcc_st" << i
             << " = reinterpret_cast<" << type << " *>(tcc_smem + " << staged[i]
             << (pipelined ? " + tcc_h * " + std::to_string(half)
                           : std::string())
             << ");\n";
    }
    if (!pipelined)
      os << rowsAt.str();
    if ((pipelined ? barOffset : smemBytes) > redOffset)
      os << "  double *const tcc_red = reinterpret_cast<double *>(tcc_smem + "
         << redOffset << ");\n";
    for (unsigned k = 0; k < op.getResults().size(); ++k)
      if (groupStores((int)k))
        os << "  const bool tcc_al" << k << " = tcc_aligned16(out" << k
           << ");\n  (void)tcc_al" << k << ";\n";
    if (!pipelined) {
      os << "  for (long long r = blockIdx.x; r < " << R
         << "; r += gridDim.x) {\n";
    } else {
      // Bulk copies need 16-byte aligned sources (the offsets are, see
      // planPipeline); otherwise the rows are staged by the threads.
      os << "  unsigned long long *const tcc_bar = reinterpret_cast<unsigned "
            "long long *>(tcc_smem + "
         << barOffset << ");\n  const bool tcc_bulk = true";
      std::set<int> inputs;
      for (size_t i = 0; i < g.nodes.size(); ++i)
        if (staged[i] >= 0)
          inputs.insert(g.nodes[i].input);
      for (int in : inputs)
        os << " && tcc_aligned16(in" << in << ")";
      os << ";\n  if (tcc_bulk) {\n    if (threadIdx.x == 0) {\n"
         << "      tcc_mbar_init(tcc_bar);\n      tcc_mbar_init(tcc_bar + 1);\n"
         << "    }\n    __syncthreads();\n"
         << "    if (threadIdx.x == 0 && blockIdx.x < " << R << ") {\n"
         << bulkCopies("(long long)blockIdx.x", "0") << "    }\n  }\n"
         << "  int tcc_it = 0;\n  for (long long r = blockIdx.x; r < " << R
         << "; r += gridDim.x, ++tcc_it) {\n"
         << "    const int tcc_h = tcc_it & 1;\n"
         << rowsAt.str();
    }
  } else {
    os << "  const long long tcc_warps = ((long long)gridDim.x * blockDim.x) "
          ">> 5;\n";
    for (int s = 0; s < g.scratch; ++s)
      os << "  float s" << s << "[" << (g.d.cols + 31) / 32 << "];\n";
    std::set<int> prefetched;
    for (const auto &[t, loads] : prefetch)
      prefetched.insert(loads.begin(), loads.end());
    for (int n : prefetched)
      os << "  " << (g.nodes[n].isInt ? "long long" : "float") << " tcc_p" << n
         << "[" << (g.d.cols + 31) / 32 << "];\n";
    if (!g.colSums) {
      os << "  for (long long r = ((long long)blockIdx.x * blockDim.x + "
            "threadIdx.x) >> 5; r < "
         << R << "; r += tcc_warps) {\n";
    } else {
      // Column sums: a block per slice of rows (any grid strides over
      // them), its warps taking the slice's rows in turn; each lane adds
      // its columns into its warp's sums in shared memory, which only it
      // touches until the block adds the warps' (emitRows' end).
      std::string cs = std::to_string(g.colSums * g.d.cols),
                  sr = std::to_string(g.sliceRows);
      os << "  (void)tcc_warps;\n  TCC_SMEM_BYTES(tcc_smem);\n"
         << "  float *const tcc_csw = reinterpret_cast<float *>(tcc_smem);\n"
         << "  float *const tcc_cs = tcc_csw + (threadIdx.x >> 5) * " << cs
         << ";\n  for (long long tcc_s = blockIdx.x; tcc_s < " << g.slices()
         << "; tcc_s += gridDim.x) {\n"
         << "  for (int j = lane; j < " << C << "; j += 32) {\n";
      for (int c = 0; c < g.colSums; ++c)
        os << "    tcc_cs[" << c * g.d.cols << " + j] = 0.0f;\n";
      os << "  }\n  const long long tcc_r1 = (tcc_s + 1) * " << sr << " < " << R
         << " ? (tcc_s + 1) * " << sr << " : " << R << ";\n"
         << "  for (long long r = tcc_s * " << sr
         << " + (threadIdx.x >> 5); r < tcc_r1; r += blockDim.x >> 5) {\n";
    }
  }
  for (const ViewVar &v : g.views)
    os << v.code;
  // Padded outputs: the lanes zero the row's pad columns (other columns
  // than any read back, so no barrier is needed).
  for (size_t k = 0; k < g.outPad.size(); ++k)
    if (g.outPad[k])
      os << "    for (int j = " << C << " + " << first << "; j < "
         << g.outStride((int)k) << "; j += " << step << ")\n      out" << k
         << "[r * " << g.outStride((int)k) << " + j] = 0;\n";
  if (wide)
    emitStaging(os);
  for (int t = 0; t <= g.maxTime; ++t) {
    if (t % 2 == 0) {
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node &n = g.nodes[i];
        if (!n.vec && n.time == t && n.kind != NodeKind::Const)
          emitRowScalar(os, (int)i);
      }
      continue;
    }
    bool any = false;
    for (const Node &n : g.nodes)
      any |= inLoop(n, t);
    if (!any)
      continue;
    // A loop that writes an in-place output: every lane has done the
    // earlier slots' reads of the row (picks read other lanes' columns)
    // before any lane writes, and within the loop body the output is
    // stored after everything that reads the input.
    bool writesInPlace = false;
    for (const Node &n : g.nodes)
      writesInPlace |= n.vec && n.time == t && n.kind == NodeKind::Expr &&
                       n.output >= 0 && g.writesInPlace(n.output);
    if (writesInPlace)
      os << "    " << sync << ";\n";
    // Loads ahead of the stores (planPrefetch).
    bool arrays = loopUsesArrays(t);
    if (auto it = prefetch.find(t); it != prefetch.end()) {
      os << columnLoop("    ", true);
      for (int n : it->second)
        os << "      tcc_p" << n << "[tcc_k] = " << load(n, "j") << ";\n";
      os << "    }\n";
    }
    // The loop body for column j; in a group, grouped outputs collect in
    // the group's arrays tcc_o<K> and are stored together at its end.
    auto body = [&](bool) {
      std::ostringstream b;
      std::string inPlaceStores;
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node &n = g.nodes[i];
        if (!inLoop(n, t))
          continue;
        if (n.kind == NodeKind::ColSum) {
          b << "      tcc_cs[" << n.colSum * g.d.cols
            << " + j] += " << subst(n, t) << ";\n";
          continue;
        }
        b << "      " << define((int)i, subst(n, t)) << "\n";
        if (n.output >= 0)
          store(b, inPlaceStores, (int)i, "      ");
        if (n.scratch >= 0 && !wide)
          b << "      s" << n.scratch << "[tcc_k] = v" << i << ";\n";
      }
      std::string text = b.str() + inPlaceStores;
      return text.substr(6, text.size() - 7); // emitWideLoop indents it
    };
    if (!wide) {
      os << columnLoop("    ", arrays) << "      " << body(false)
         << "\n    }\n";
      continue;
    }
    std::set<int> outs; // the loop's grouped outputs
    for (const Node &n : g.nodes)
      if (n.vec && n.time == t && n.kind == NodeKind::Expr && n.output >= 0 &&
          groupStores(n.output))
        outs.insert(n.output);
    std::string init, fini;
    for (int k : outs) {
      const char *type = cudaType(op.getResults()[k].getType());
      init += (init.empty() ? "" : " ") + std::string(type) + " tcc_o" +
              std::to_string(k) + "[8];";
      fini += (fini.empty() ? "" : " ") + std::string("tcc_st8(out") +
              std::to_string(k) + " + (r * " + std::to_string(g.outStride(k)) +
              " + tcc_q * 8), tcc_o" + std::to_string(k) + ", tcc_al" +
              std::to_string(k) + ");";
    }
    emitWideLoop(os, "    ", body, init, fini);
  }
  // block_rows: every thread is done with the row's shared memory (staged
  // rows, reduction slots) before the next row's copies overwrite it.
  if (wide)
    os << "    __syncthreads();\n";
  os << "  }\n";
  if (g.colSums) {
    // The block's sums of the slice: the warps' in warp order, in double.
    std::string cs = std::to_string(g.colSums * g.d.cols);
    os << "  __syncthreads();\n"
       << "  for (int tcc_i = threadIdx.x; tcc_i < " << cs
       << "; tcc_i += blockDim.x) {\n    double tcc_t = 0.0;\n"
       << "    for (int tcc_w = 0; tcc_w < (int)(blockDim.x >> 5); ++tcc_w)\n"
       << "      tcc_t += static_cast<double>(tcc_csw[tcc_w * " << cs
       << " + tcc_i]);\n    tcc_partials[" << g.colBase() << " + tcc_s * " << cs
       << " + tcc_i] = tcc_t;\n  }\n  __syncthreads();\n  }\n";
  }
  os << "}\n";
}

/// The column sums' totals: 32 columns a block (any grid strides over
/// them), whose threads (x, y) add slices y, y + Y, .. of column x (four
/// loads in flight), then thread y = 0 adds the Y sums in order. One
/// thread a column had waited on 512 dependent loads.
void CudaEmitter::emitColFin(std::ostream &os) const {
  std::string cs = std::to_string(g.colSums * g.d.cols),
              S = std::to_string(g.slices());
  os << " {\n";
  for (unsigned k = 0; k < op.getInputs().size(); ++k)
    os << "  (void)in" << k << ";\n";
  os << "  (void)tcc_err;\n  __shared__ double tcc_fin_cols[32][33];\n"
     << "  const int x = threadIdx.x & 31, y = threadIdx.x >> 5, ny = "
        "blockDim.x >> 5;\n"
     << "  for (long long tcc_i0 = (long long)blockIdx.x * 32; tcc_i0 < " << cs
     << "; tcc_i0 += (long long)gridDim.x * 32) {\n"
     << "    const long long tcc_i = tcc_i0 + x;\n    double t = 0.0;\n"
     << "    if (tcc_i < " << cs << ") {\n"
     << "      const double *p = tcc_partials + " << g.colBase()
     << " + tcc_i;\n      long long s = y;\n"
     << "      for (; s + 3 * ny < " << S << "; s += 4 * ny) {\n"
     << "        const double a = p[s * " << cs << "], b = p[(s + ny) * " << cs
     << "], c = p[(s + 2 * ny) * " << cs << "], d = p[(s + 3 * ny) * " << cs
     << "];\n        t += a;\n        t += b;\n        t += c;\n"
     << "        t += d;\n      }\n      for (; s < " << S
     << "; s += ny)\n        t += p[s * " << cs << "];\n    }\n"
     << "    tcc_fin_cols[y][x] = t;\n    __syncthreads();\n"
     << "    if (y == 0 && tcc_i < " << cs << ") {\n      double all = 0.0;\n"
     << "      for (int w = 0; w < ny; ++w)\n        all += "
        "tcc_fin_cols[w][x];\n"
     << "      const int c = (int)(tcc_i / " << C << "), j = (int)(tcc_i % "
     << C << ");\n      (void)c;\n";
  for (auto [k, c] : g.colOut)
    os << "      if (c == " << c << ")\n        out" << k
       << "[j] = static_cast<float>(all);\n";
  os << "    }\n    __syncthreads();\n  }\n}\n";
}

/// The losses' mean over rows. Thread t of the one block adds rows
/// [t * per, (t + 1) * per) in order, then thread 0 adds the threads' sums
/// in thread order: deterministic for a block size, and with one thread
/// exactly the host library's row-order sum. One thread alone waited on
/// 32768 dependent loads and adds (GPT-2 at batch 32), about half a
/// millisecond.
void CudaEmitter::emitFin(std::ostream &os) const {
  os << " {\n  if (blockIdx.x != 0)\n    return;\n";
  for (unsigned k = 0; k < op.getInputs().size(); ++k)
    os << "  (void)in" << k << ";\n";
  os << "  (void)tcc_err;\n  __shared__ double tcc_fin_sums[1024];\n"
     << "  const long long tcc_per = (" << R
     << "LL + blockDim.x - 1) / blockDim.x;\n"
     << "  const long long tcc_lo = threadIdx.x * tcc_per;\n"
     << "  const long long tcc_hi = tcc_lo + tcc_per < " << R
     << "LL ? tcc_lo + tcc_per : " << R << "LL;\n";
  // A loss: the sum of its rows' partials over the count of rows that
  // count (the next slot), 0 when none does.
  for (auto [out, slot] : g.partialOut) {
    if (out < 0)
      continue;
    os << "  {\n    double t = 0, c = 0;\n    for (long long r = tcc_lo; "
          "r < tcc_hi; ++r) {\n      t += tcc_partials[r * "
       << g.partials << " + " << slot << "];\n      c += tcc_partials[r * "
       << g.partials << " + " << slot + 1
       << "];\n    }\n    tcc_fin_sums[threadIdx.x] = t;\n"
       << "    __syncthreads();\n"
       << "    double all = 0, n = 0;\n    if (threadIdx.x == 0)\n"
       << "      for (unsigned u = 0; u < blockDim.x; ++u)\n"
       << "        all += tcc_fin_sums[u];\n    __syncthreads();\n"
       << "    tcc_fin_sums[threadIdx.x] = c;\n    __syncthreads();\n"
       << "    if (threadIdx.x == 0) {\n"
       << "      for (unsigned u = 0; u < blockDim.x; ++u)\n"
       << "        n += tcc_fin_sums[u];\n      out" << out
       << "[0] = n > 0 ? static_cast<float>(all / n) : 0.0f;\n    }\n"
       << "    __syncthreads();\n  }\n";
  }
  os << "}\n";
}

LogicalResult CudaEmitter::emit(std::string &code, rt::DeviceKernel &k) {
  auto dtypeOf = [&](Value v, unsigned i,
                     const char *what) -> FailureOr<rt::DType> {
    Type e = cast<ShapedType>(v.getType()).getElementType();
    if (e.isF32())
      return rt::DType::F32;
    if (e.isBF16())
      return rt::DType::BF16;
    if (e.isF16())
      return rt::DType::F16;
    if (isa<IntegerType>(e))
      return rt::DType::I64; // integers and booleans are i64 at run time
    return op.emitError("CUDA codegen: ")
           << what << " #" << i << " has element type " << e
           << "; generated kernels take f32, bf16, f16 and integer operands";
  };
  k = rt::DeviceKernel();
  for (auto [i, v] : llvm::enumerate(op.getInputs())) {
    auto t = dtypeOf(v, i, "input");
    if (failed(t))
      return failure();
    k.inputs.push_back({*t, cast<ShapedType>(v.getType()).getNumElements()});
  }
  for (auto [i, v] : llvm::enumerate(op.getResults())) {
    auto t = dtypeOf(v, i, "result");
    if (failed(t))
      return failure();
    k.outputs.push_back({*t, cast<ShapedType>(v.getType()).getNumElements()});
  }
  std::string K = std::to_string(g.index);
  k.symbol = "tcc_fused_" + K;
  if (g.colSums && wide)
    return op.emitError("CUDA codegen: column sums over rows of ")
           << g.d.cols << " columns (at most " << kMaxColSumCols << ")";
  k.finSymbol = g.partials || g.colSums ? k.symbol + "_fin" : "";
  k.name = regionName(op);
  k.mapping = wide ? "block_rows" : rows ? "rows" : "elements";
  k.rows = g.d.rows;
  k.cols = g.d.cols;
  k.partialsPerRow = g.partials;
  k.block = threads;
  k.smem = smemBytes;
  k.gridPerSm = gridPerSm; // 0 unless pipelined
  k.colSums = g.colSums;
  k.sliceRows = g.sliceRows;
  for (auto [o, i] : g.inPlace)
    k.inPlace.push_back({o, i});

  std::ostringstream os;
  os << "// kernel " << K << " (" << k.name << "): mapping " << k.mapping
     << ", " << k.block << " threads per block, domain " << k.rows << "x"
     << k.cols;
  if (k.smem)
    os << ", " << k.smem << " bytes of shared memory";
  if (g.partials)
    os << ", " << g.partials << " partials per row";
  if (g.colSums)
    os << ", " << g.colSums << " column sums over " << g.slices()
       << " slices of " << g.sliceRows << " rows";
  os << "\n";
  signature(os, k.symbol);
  if (rows)
    emitRows(os);
  else
    emitElements(os);
  if (g.partials) {
    signature(os, k.finSymbol);
    emitFin(os);
  } else if (g.colSums) {
    signature(os, k.finSymbol, rt::kColFinThreads);
    emitColFin(os);
  }
  code = toCuda(os.str());
  for (size_t pos; (pos = code.find("PARTIALS")) != std::string::npos;)
    code.replace(pos, 8, std::to_string(g.partials));
  return success();
}

namespace tcc::fusedgen {
LogicalResult emitCudaKernel(const KernelGraph &g, int arch, std::string &code,
                             rt::DeviceKernel &kernel) {
  return CudaEmitter(g, arch).emit(code, kernel);
}
} // namespace tcc::fusedgen

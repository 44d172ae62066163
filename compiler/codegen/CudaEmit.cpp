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
#include "compiler/codegen/CudaEmitter.h"

#include <sstream>

using namespace ::tcc::fusedgen;

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

bool CudaEmitter::inLoop(const Node &n, int t) {
  return n.vec && n.time == t &&
         (n.kind == NodeKind::Expr || n.kind == NodeKind::ColSum);
}

SmallVector<int> CudaEmitter::templateArgs(const Node &n) {
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

const char *CudaEmitter::cudaType(Type t) {
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

//===- CudaEmitRows.cpp - CUDA rows and block_rows kernels of a region ---===//
//
// The "rows" (a warp per row) and "block_rows" (a block per wide row)
// mappings described in CudaEmit.cpp: the row-scalar slots, the column
// loops, the shared-memory staging and its sm_90 double buffering, and the
// fin kernels that sum per-row partials and column sums.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/CudaEmitter.h"

#include <sstream>

using namespace ::tcc::fusedgen;

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

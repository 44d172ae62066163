//===- FusedEmit.cpp - Writing one region's node graph as C++ -------------===//
//
// See FusedCodegen.cpp for the node graph. Per row: row offsets of the
// broadcast inputs, then for each time slot either straight-line scalar code
// (even) or one loop over the columns (odd) that loads each vector it reads
// once, computes its expressions and stores what later slots or the outputs
// need. A padded output's rows are cols + pad wide; each row zeroes its pad
// columns first.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedCodegenInternal.h"

#include "runtime/core/abi/FusedAbi.h"

#include <sstream>

using namespace ::tcc::fusedgen;

std::string KernelGen::ref(int n, int loopTime, StringRef j) const {
  const Node &x = nodes[n];
  std::string v = "v" + std::to_string(n);
  if (loopLocals.count(n))
    return "l" + std::to_string(n);
  switch (x.kind) {
  case NodeKind::Const:
    return x.tmpl;
  case NodeKind::Load: {
    if (!x.vec)
      return v;
    std::string e =
        "in" + std::to_string(x.input) + "[" + x.tmpl + " + " + j.str() + "]";
    return x.half == Half::None ? e : widenFn(x.half) + "(" + e + ")";
  }
  default:
    break;
  }
  if (!x.vec || x.time == loopTime)
    return v;
  if (x.scratch >= 0)
    return "s" + std::to_string(x.scratch) + "[" + j.str() + "]";
  return "out" + std::to_string(x.output) + "[r * " +
         std::to_string(outStride(x.output)) + " + " + j.str() + "]";
}

std::string KernelGen::ptr(int n) const {
  const Node &x = nodes[n];
  if (x.kind == NodeKind::Load)
    return "(in" + std::to_string(x.input) + " + " + x.tmpl + ")";
  if (x.scratch >= 0)
    return "s" + std::to_string(x.scratch);
  return "(out" + std::to_string(x.output) + " + r * " +
         std::to_string(outStride(x.output)) + ")";
}

std::string KernelGen::define(int n, const std::string &value) const {
  const Node &x = nodes[n];
  std::string id = std::to_string(n);
  if (x.half == Half::None)
    return "const float v" + id + " = " + value + ";";
  return "const uint16_t h" + id + " = " + narrowFn(x.half) + "(" + value +
         "); const float v" + id + " = " + widenFn(x.half) + "(h" + id + ");";
}

std::string KernelGen::stored(int n) const {
  return (nodes[n].half == Half::None ? "v" : "h") + std::to_string(n);
}

std::string KernelGen::subst(const Node &n, int loopTime, StringRef j) const {
  std::string out;
  const std::string &t = n.tmpl;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '$' && i + 1 < t.size() && t[i + 1] == 'j') {
      out += j.str();
      ++i;
    } else if (t[i] == '$' && i + 1 < t.size() && isdigit(t[i + 1])) {
      out += ref(n.args[t[i + 1] - '0'], loopTime, j);
      ++i;
    } else {
      out += t[i];
    }
  }
  return out;
}

/// runtime/cpu/FusedLibrary.h's dtype codes: 0 f32, 1 i64 (integers and
/// booleans), 2 bf16, 3 f16.
static int64_t dtypeCode(Type t) {
  Type e = cast<ShapedType>(t).getElementType();
  return e.isF32() ? 0 : e.isBF16() ? 2 : e.isF16() ? 3 : 1;
}

static const char *cppType(int64_t code) {
  return code == 0 ? "float" : code == 1 ? "int64_t" : "uint16_t";
}

LogicalResult KernelGen::run(std::string &code, std::vector<int64_t> &meta) {
  if (failed(analyze()))
    return failure();
  emitCpp(code, meta);
  return success();
}

void KernelGen::emitCpp(std::string &code, std::vector<int64_t> &meta) {
  Block &body = op.getBody().front();
  std::ostringstream os;
  std::string K = std::to_string(index), C = std::to_string(d.cols);
  unsigned nIn = op.getInputs().size();
  os << "extern \"C\" int tcc_fused_" << K
     << "(void *const *tcc_buf, int64_t tcc_r0, int64_t tcc_r1, "
        "float *__restrict tcc_scratch, double *__restrict tcc_partials, "
        "int64_t *tcc_err) {\n";
  os << "  (void)tcc_scratch; (void)tcc_partials; (void)tcc_err;\n";
  // An in-place pair may be one buffer: neither pointer is __restrict.
  for (auto [k, v] : llvm::enumerate(op.getInputs())) {
    const char *t = cppType(dtypeCode(v.getType()));
    os << "  const " << t << (readsInPlace((int)k) ? " *" : " *__restrict")
       << " in" << k << " = static_cast<const " << t << " *>(tcc_buf[" << k
       << "]);\n";
  }
  for (auto [k, v] : llvm::enumerate(op.getResults())) {
    const char *t = cppType(dtypeCode(v.getType()));
    os << "  " << t << (writesInPlace((int)k) ? " *" : " *__restrict") << " out"
       << k << " = static_cast<" << t << " *>(tcc_buf[" << nIn + k << "]);\n";
  }
  for (int s = 0; s < scratch; ++s)
    os << "  float *__restrict s" << s << " = tcc_scratch + " << s * d.cols
       << ";\n";
  os << "  for (int64_t r = tcc_r0; r < tcc_r1; ++r) {\n";
  for (const ViewVar &v : views)
    os << v.code;
  // The row's slice of each column sum (the runtime gives a call whole
  // slices, so no other thread adds to them).
  for (int c = 0; c < colSums; ++c)
    os << "    double *__restrict cs" << c << " = tcc_partials + " << colBase()
       << " + (r / " << sliceRows << ") * " << colSums * d.cols << " + "
       << c * d.cols << ";\n";
  // Padded outputs: the pad columns of the row are zeros.
  for (size_t k = 0; k < outPad.size(); ++k)
    if (outPad[k])
      os << "    for (int64_t j = " << C << "; j < " << outStride((int)k)
         << "; ++j)\n      out" << k << "[r * " << outStride((int)k)
         << " + j] = 0;\n";
  for (int t = 0; t <= maxTime; ++t) {
    if (t % 2 == 0) {
      for (size_t i = 0; i < nodes.size(); ++i) {
        const Node &n = nodes[i];
        if (n.vec || n.time != t || n.kind == NodeKind::Const)
          continue;
        std::string v = "v" + std::to_string(i);
        switch (n.kind) {
        case NodeKind::Load: {
          std::string e = "in" + std::to_string(n.input) + "[" + n.tmpl + "]";
          if (n.half != Half::None)
            e = widenFn(n.half) + "(" + e + ")";
          if (n.checkLabel) {
            // An ignored row's label is 0, a column the picks may read.
            std::string raw = "tcc_raw" + std::to_string(i),
                        ign = "tcc_ign" + std::to_string(i);
            os << "    const int64_t " << raw << " = " << e << ";\n"
               << "    const bool " << ign << " = " << raw
               << " == " << n.ignoreLabel << "LL;\n"
               << "    if (!" << ign << " && (" << raw << " < 0 || " << raw
               << " >= " << C << ")) { tcc_err[0] = r; tcc_err[1] = " << raw
               << "; tcc_err[2] = " << C << "; return 1; }\n"
               << "    const int64_t " << v << " = " << ign << " ? 0 : " << raw
               << ";\n";
            break;
          }
          os << "    const " << (n.isInt ? "int64_t " : "float ") << v << " = "
             << e << ";\n";
          break;
        }
        case NodeKind::Expr:
          os << "    " << define((int)i, subst(n, -1, "0")) << "\n";
          break;
        case NodeKind::Reduce:
          os << "    const " << (n.tmpl == "sumexp_f64" ? "double " : "float ")
             << v << " = tcc_row" << n.tmpl << "(" << ptr(n.args[0]) << ", "
             << C << (n.args.size() > 1 ? ", " + ref(n.args[1], -1, "0") : "")
             << ");\n";
          break;
        case NodeKind::Pick:
          os << "    const float " << v << " = " << ptr(n.args[0]) << "["
             << ref(n.args[1], -1, "0") << "];\n";
          break;
        case NodeKind::Partial:
          os << "    " << subst(n, -1, "0") << "\n";
          break;
        default:
          break;
        }
        for (auto [node, k] : rowStores)
          if (node == (int)i)
            os << "    out" << k << "[r] = " << stored((int)i) << ";\n";
      }
      continue;
    }
    auto inLoop = [&](const Node &n) {
      return n.vec && n.time == t &&
             (n.kind == NodeKind::Expr || n.kind == NodeKind::ColSum);
    };
    bool any = false;
    for (const Node &n : nodes)
      any |= inLoop(n);
    if (!any)
      continue;
    // Iteration j reads column j of an in-place input before it stores
    // column j of the output (inPlaceSafe) and no other column: no
    // dependence between iterations, which GCC cannot see without
    // __restrict.
    if (!inPlace.empty())
      os << "#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC ivdep\n"
            "#endif\n";
    os << "    for (int64_t j = 0; j < " << C << "; ++j) {\n";
    loopLocals.clear();
    std::set<int> reads;
    for (const Node &n : nodes)
      if (inLoop(n))
        for (int a : n.args)
          if (nodes[a].vec &&
              (nodes[a].kind == NodeKind::Load || nodes[a].time != t))
            reads.insert(a);
    for (int a : reads)
      os << "      const " << (nodes[a].isInt ? "int64_t" : "float") << " l"
         << a << " = " << ref(a, t, "j") << ";\n";
    loopLocals = reads;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node &n = nodes[i];
      if (!inLoop(n))
        continue;
      if (n.kind == NodeKind::ColSum) {
        // In double: each argument widened first.
        Node wide = n;
        wide.tmpl.clear();
        for (size_t c = 0; c < n.tmpl.size(); ++c) {
          if (n.tmpl[c] == '$' && c + 1 < n.tmpl.size() &&
              isdigit(n.tmpl[c + 1])) {
            wide.tmpl += "static_cast<double>($";
            wide.tmpl += n.tmpl[++c];
            wide.tmpl += ")";
          } else {
            wide.tmpl += n.tmpl[c];
          }
        }
        os << "      cs" << n.colSum << "[j] += " << subst(wide, t, "j")
           << ";\n";
        continue;
      }
      os << "      " << define((int)i, subst(n, t, "j")) << "\n";
      if (n.output >= 0)
        os << "      out" << n.output << "[r * " << outStride(n.output)
           << " + j] = " << stored((int)i) << ";\n";
      if (n.scratch >= 0)
        os << "      s" << n.scratch << "[j] = v" << i << ";\n";
    }
    os << "    }\n";
    loopLocals.clear();
  }
  os << "  }\n  return 0;\n}\n";
  if (partials || colSums) {
    os << "extern \"C\" void tcc_fused_" << K
       << "_fin(void *const *tcc_buf, const double *tcc_partials) {\n";
    for (auto [k, c] : colOut)
      os << "  for (int64_t j = 0; j < " << C << "; ++j) {\n"
         << "    double t = 0;\n    for (int64_t s = 0; s < " << slices()
         << "; ++s)\n      t += tcc_partials[" << colBase() << " + s * "
         << colSums * d.cols << " + " << c * d.cols << " + j];\n"
         << "    static_cast<float *>(tcc_buf[" << nIn + k
         << "])[j] = static_cast<float>(t);\n  }\n";
    // A loss: the sum of its rows' partials over the count of rows that
    // count (the next slot), 0 when none does (KernelsLoss.cpp).
    for (auto [k, p] : partialOut) {
      if (k < 0)
        continue;
      os << "  {\n    double t = 0, n = 0;\n    for (int64_t r = 0; r < "
         << d.rows << "; ++r) {\n      t += tcc_partials[r * " << partials
         << " + " << p << "];\n      n += tcc_partials[r * " << partials
         << " + " << p + 1 << "];\n    }\n    static_cast<float *>(tcc_buf["
         << nIn + k << "])[0] = n > 0 ? static_cast<float>(t / n) : 0.0f;\n"
         << "  }\n";
    }
    os << "}\n";
  }
  code = os.str();
  for (size_t pos; (pos = code.find("PARTIALS")) != std::string::npos;)
    code.replace(pos, 8, std::to_string(partials));

  // A rough cost per element, for the runtime's choice of threads.
  int64_t work = 0;
  for (Operation &o : body.without_terminator()) {
    if (isa<ConstantOp>(o) || isDataMovement(&o))
      continue;
    bool heavy =
        isa<ExpOp, LogOp, TanhOp, SigmoidOp, ErfOp, ErfGradOp, PowOp,
            PowScalarOp, PowScalarGradOp, GeluOp, GeluGradOp, SoftmaxOp,
            LogSoftmaxOp, LogSoftmaxGradOp, SoftmaxCrossEntropyOp,
            SoftmaxCrossEntropyGradOp, LayerNormOp, UnaryFnOp, UnaryFnGradOp>(
            o);
    work += heavy ? 4 : 1;
  }
  meta = {d.rows,
          d.cols,
          (int64_t)nIn,
          (int64_t)op.getNumResults(),
          (int64_t)scratch * d.cols,
          partials,
          work,
          (int64_t)inPlace.size(),
          colSums,
          sliceRows};
  for (Value v : llvm::concat<Value>(op.getInputs(), op.getResults())) {
    auto t = cast<ShapedType>(v.getType());
    meta.push_back(dtypeCode(t));
    meta.push_back(t.getNumElements());
  }
  for (auto [o, i] : inPlace)
    meta.insert(meta.end(), {(int64_t)o, (int64_t)i});
}

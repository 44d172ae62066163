//===- FusedCodegen.cpp - C++ for tcc.fused regions -----------------------===//
//
// Each region becomes `int tcc_fused_K(buffers, r0, r1, scratch, partials,
// err)` (ABI: runtime/cpu/FusedLibrary.h) that loops over its rows. Per row
// the region is a small graph of nodes: loads of inputs (through their
// broadcast view), element-wise expressions, row reductions (sum, max),
// picks (x[label]) and per-row partials of whole-region results (losses).
// Each node is either a vector (one value per column) or a row scalar.
// Nodes get a time: even times are straight-line code in the row's scope,
// odd times are loops over the columns. A vector expression runs in the
// first loop after its operands exist, so chains of element-wise ops become
// one loop whose intermediates stay in registers; a vector read by a later
// loop or by a reduction is stored to a per-thread scratch row (or read back
// from the output it is written to). Reductions run over stored rows with
// eight lanes in a fixed order (tcc_rowsum/tcc_rowmax), so results do not
// depend on how rows are split across threads.
// bf16/f16 (Node::half): loads convert words up, every element-wise result
// whose type is 16-bit is rounded where it is computed, outputs store the
// words; so a region computes what the unfused kernels do (each converts
// up, computes in f32 and rounds its result once), bit for bit, including
// libm's exp/erf/tanh for 16-bit results. A cast up is the value itself.
// A slice is a Load through its view (FusionModel.h); a last-axis zero pad
// is its operand's node, stored to an output whose rows are wider
// (KernelGraph::outPad) and whose pad columns the emitters zero.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedCodegen.h"

#include "compiler/codegen/FusedCodegenInternal.h"
#include "compiler/codegen/KernelDedup.h"
#include "dialects/tcc/TccOps.h"
#include "passes/FusionModel.h"
#include "runtime/core/abi/FusedAbi.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fusion;

using namespace ::tcc::fusedgen;

int KernelGen::add(Node n) {
  std::string key = std::to_string((int)n.kind) + (n.vec ? "v" : "s") +
                    std::to_string((int)n.half) + n.tmpl + "|" +
                    std::to_string(n.input) + "|" + std::to_string(n.view);
  for (int a : n.args)
    key += "," + std::to_string(a);
  if (n.kind != NodeKind::Partial) {
    auto it = cse.find(key);
    if (it != cse.end())
      return it->second;
  }
  nodes.push_back(std::move(n));
  int id = (int)nodes.size() - 1;
  cse[key] = id;
  return id;
}

int KernelGen::expr(StringRef tmpl, ArrayRef<int> args, bool vec, Half half) {
  Node n{NodeKind::Expr};
  n.tmpl = tmpl.str();
  n.half = half;
  n.args.assign(args.begin(), args.end());
  n.vec = vec && d.cols > 1;
  int t = 0;
  for (int a : args)
    t = std::max(t, avail(a));
  n.time = n.vec ? (t % 2 ? t : t + 1) : t + (t % 2);
  // A libm call (a 16-bit result's exp/erf/tanh) keeps its loop scalar: it
  // gets a loop of its own, after the one computing its operands, so that
  // one still vectorizes (the operands go through a scratch row).
  if (n.vec && t % 2 && n.tmpl.find("tcc_libm_") != std::string::npos)
    n.time = t + 2;
  return add(std::move(n));
}

int KernelGen::asF32Row(int arg) {
  const Node &x = nodes[arg];
  if (x.kind == NodeKind::Load && x.vec && x.half != Half::None)
    return expr("$0", {arg}, true);
  return arg;
}

/// Marks vector `arg` as needed in memory and returns the time after it.
int KernelGen::reduce(StringRef kind, int arg) {
  if (!nodes[arg].vec)
    return arg; // one column: the reduction of one value
  arg = asF32Row(arg);
  Node n{NodeKind::Reduce};
  n.tmpl = kind.str();
  n.args = {arg};
  n.time = nodes[arg].kind == NodeKind::Load ? 0 : nodes[arg].time + 1;
  if (nodes[arg].kind != NodeKind::Load)
    nodes[arg].stored = true;
  return add(std::move(n));
}

int KernelGen::colSum(StringRef tmpl, ArrayRef<int> args) {
  Node n{NodeKind::ColSum};
  n.tmpl = tmpl.str();
  n.args.assign(args.begin(), args.end());
  n.vec = true;
  int t = 1;
  for (int a : args)
    t = std::max(t, avail(a));
  n.time = t % 2 ? t : t + 1;
  n.colSum = colSums++;
  nodes.push_back(std::move(n)); // never merged: each is one output
  return (int)nodes.size() - 1;
}

int KernelGen::pick(int vecArg, int idx) {
  if (!nodes[vecArg].vec)
    return vecArg;
  vecArg = asF32Row(vecArg);
  Node n{NodeKind::Pick};
  n.args = {vecArg, idx};
  int t = nodes[vecArg].kind == NodeKind::Load ? 0 : nodes[vecArg].time + 1;
  n.time = std::max(t, avail(idx));
  n.time += n.time % 2;
  if (nodes[vecArg].kind != NodeKind::Load)
    nodes[vecArg].stored = true;
  return add(std::move(n));
}

std::string KernelGen::viewOffset(int input, const View &v) {
  if (v.isConstant())
    return "0";
  if (v.isFullNative(d.cols))
    return "(r * " + std::to_string(d.cols) + ")";
  if (v.isRowNative())
    return "r";
  // offset = r * s (e.g. a slice dropping a pad): no index arithmetic.
  if (auto s = v.rowScale(); s && *s > 0)
    return "(r * " + std::to_string(*s) + ")";
  std::string key = std::to_string(input) + ":";
  for (size_t k = 0; k < v.rowShape.size(); ++k)
    key += std::to_string(v.rowShape[k]) + "/" +
           std::to_string(v.rowStrides[k]) + ",";
  auto it = viewIds.find(key);
  if (it != viewIds.end())
    return views[it->second].offset;
  std::string name = "o" + std::to_string(views.size());
  std::string code = "    int64_t " + name + " = 0, q" + name + " = r;\n";
  for (size_t k = v.rowShape.size(); k-- > 0;) {
    if (v.rowShape[k] == 1)
      continue;
    std::string s = std::to_string(v.rowShape[k]);
    if (v.rowStrides[k] != 0)
      code += "    " + name + " += (q" + name + " % " + s + ") * " +
              std::to_string(v.rowStrides[k]) + ";\n";
    code += "    q" + name + " /= " + s + ";\n";
  }
  code += "    (void)q" + name + ";\n";
  viewIds[key] = (int)views.size();
  views.push_back({name, code});
  return name;
}

FailureOr<int> KernelGen::use(Operation *o, unsigned i) {
  Value v = o->getOperand(i);
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto view = operandView(o, i, d);
    if (failed(view))
      return o->emitError("fused codegen: operand #")
             << i << " does not fit the region's " << d.rows << "x" << d.cols
             << " domain";
    Node n{NodeKind::Load};
    n.input = (int)arg.getArgNumber();
    Type elem = cast<ShapedType>(v.getType()).getElementType();
    n.isInt = isa<IntegerType>(elem);
    n.half = halfOf(elem);
    n.vec = view->colStride == 1 && d.cols > 1;
    n.tmpl = viewOffset(n.input, *view);
    if (view->isConstant())
      n.rowScale = 0;
    else if (view->isFullNative(d.cols))
      n.rowScale = d.cols;
    else if (auto s = view->rowScale(); s && *s > 0)
      n.rowScale = *s;
    return add(std::move(n));
  }
  auto it = valueNode.find(v);
  if (it == valueNode.end())
    return o->emitError("fused codegen: operand #") << i << " has no node";
  return it->second;
}

LogicalResult KernelGen::lower(Operation *o) {
  if (auto c = dyn_cast<ConstantOp>(o)) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    Type elem = dense ? dense.getElementType() : Type();
    if (!dense || !dense.isSplat() ||
        !(elem.isF32() || elem.isBF16() || elem.isF16()))
      return o->emitError("fused codegen: only f32, bf16 and f16 splat "
                          "constants can be inlined");
    Node n{NodeKind::Const};
    n.tmpl = elem.isF32()
                 ? floatLiteral(dense.getSplatValue<float>())
                 : halfLiteral(dense.getSplatValue<APFloat>(), halfOf(elem));
    valueNode[c.getResult()] = add(std::move(n));
    return success();
  }
  SmallVector<int> a;
  for (unsigned i = 0; i < o->getNumOperands(); ++i) {
    auto n = use(o, i);
    if (failed(n))
      return failure();
    a.push_back(*n);
  }
  auto layout = resultLayout(o, 0, d);
  if (failed(layout))
    return o->emitError("fused codegen: result does not fit the domain");
  bool V = *layout == Layout::Full;
  std::string C = std::to_string(d.cols), Cf = floatLiteral((double)d.cols);
  auto set = [&](unsigned r, int n) { valueNode[o->getResult(r)] = n; };
  // Element-wise results of type bf16/f16 are rounded (Node::half).
  Half H = halfOf(cast<ShapedType>(o->getResult(0).getType()).getElementType());
  // A last-axis pad: the values are its operand's; the output is padded.
  // A slice: its Load (through the view) already is the value, in the
  // layout the result has (no 16-bit round trip per element).
  if (*layout == Layout::Padded ||
      (isa<SliceOp>(o) && nodes[a[0]].vec == (V && d.cols > 1) &&
       nodes[a[0]].half == H)) {
    set(0, a[0]);
    return success();
  }
  auto elementwise = [&](std::string t) {
    if (H != Half::None)
      t = libmMath(t);
    set(0, expr(t, a, V, H));
    return success();
  };

  // A 16-bit value cast up is the f32 value its node already holds.
  if (auto c = dyn_cast<CastOp>(o);
      c && H == Half::None && nodes[a[0]].kind != NodeKind::Load &&
      cast<ShapedType>(c.getResult().getType()).getElementType().isF32()) {
    set(0, a[0]);
    return success();
  }
  std::string t = elementwiseTemplate(o);
  if (!t.empty())
    return elementwise(t);
  if (auto p = dyn_cast<PowScalarOp>(o))
    return elementwise(powTemplate(p.getExponent().convertToDouble(), "$0"));
  if (auto p = dyn_cast<PowScalarGradOp>(o)) {
    double e = p.getExponent().convertToDouble();
    std::string g;
    if (static_cast<float>(e) == 0.0f)
      g = "($0 * 0.0f + 0.0f)";
    else if (static_cast<float>(e) == 2.0f)
      g = "($0 * (2.0f * $1))";
    else
      g = "($0 * (" + floatLiteral(e) + " * " + powTemplate(e - 1.0, "$1") +
          "))";
    if (static_cast<float>(e) == 0.0f)
      g = "0.0f";
    return elementwise(g);
  }
  if (isa<SoftmaxOp>(o)) {
    int m = reduce("max", a[0]);
    int e = expr("tcc_exp($0 - $1)", {a[0], m}, true);
    int inv = expr("(1.0f / $0)", {reduce("sum", e)}, false);
    set(0, expr("($0 * $1)", {e, inv}, true));
    return success();
  }
  if (isa<LogSoftmaxOp>(o)) {
    int m = reduce("max", a[0]);
    int dd = expr("($0 - $1)", {a[0], m}, true);
    int e = expr("tcc_exp($0)", {dd}, true);
    int ls = expr("std::log($0)", {reduce("sum", e)}, false);
    set(0, expr("($0 - $1)", {dd, ls}, true));
    return success();
  }
  if (isa<SoftmaxGradOp>(o)) {
    int s = reduce("sum", expr("($0 * $1)", {a[0], a[1]}, true));
    set(0, expr("($1 * ($0 - $2))", {a[0], a[1], s}, true));
    return success();
  }
  if (isa<LogSoftmaxGradOp>(o)) {
    int s = reduce("sum", a[0]);
    set(0, expr("($0 - tcc_exp($1) * $2)", {a[0], a[1], s}, true));
    return success();
  }
  if (isa<ReduceSumOp>(o) && *layout == Layout::Column) {
    set(0, colSum("$0", {a[0]}));
    return success();
  }
  if (isa<ReduceSumOp>(o)) {
    set(0, reduce("sum", a[0]));
    return success();
  }
  if (isa<ReduceMeanOp>(o)) {
    set(0, expr("($0 / " + Cf + ")", {reduce("sum", a[0])}, false));
    return success();
  }
  if (auto ln = dyn_cast<LayerNormOp>(o)) {
    int mean = expr("($0 / " + Cf + ")", {reduce("sum", a[0])}, false);
    int dd = expr("($0 - $1)", {a[0], mean}, true);
    int var = reduce("sum", expr("($0 * $0)", {dd}, true));
    char eps[64];
    std::snprintf(eps, sizeof eps, "%.17g", ln.getEpsilon().convertToDouble());
    int rstd = expr("static_cast<float>(1.0 / std::sqrt(static_cast<double>"
                    "($0) / " +
                        C + ".0 + " + eps + "))",
                    {var}, false);
    set(0, expr("($0 * $1 * $2 + $3)", {dd, rstd, a[1], a[2]}, true));
    set(1, mean);
    set(2, rstd);
    return success();
  }
  if (isa<LayerNormParamGradOp>(o)) {
    // As run_layer_norm_param_grad: xhat in f32, the sums of dy * xhat and
    // dy (in double on the host, FusedEmit.cpp).
    int xhat = expr("(($0 - $1) * $2)", {a[1], a[2], a[3]}, true);
    set(0, colSum("($0 * $1)", {a[0], xhat}));
    set(1, colSum("$0", {a[0]}));
    return success();
  }
  if (isa<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp>(o)) {
    bool grad = isa<SoftmaxCrossEntropyGradOp>(o);
    int x = asF32Row(a[grad ? 1 : 0]), lab = a[grad ? 2 : 1];
    auto attr = [&](StringRef name) { return o->getAttr(name); };
    int64_t ignore = cast<IntegerAttr>(attr("ignore_index")).getInt();
    double S = cast<FloatAttr>(attr("label_smoothing")).getValueAsDouble();
    if (nodes[lab].kind != NodeKind::Load || nodes[lab].vec)
      return o->emitError("fused codegen: the labels must be a region input");
    if (nodes[lab].checkLabel && nodes[lab].ignoreLabel != ignore)
      return o->emitError("fused codegen: two losses read the same labels "
                          "with different ignore_index");
    nodes[lab].checkLabel = true;
    nodes[lab].ignoreLabel = ignore;
    // tcc_ign<lab>: the row's label is ignore_index (the emitters define it
    // with the label's load, which makes the label 0 there).
    std::string ign = "tcc_ign" + std::to_string(lab);
    // As runtime/cpu/KernelsLoss.cpp computes it, operation for operation
    // (its fastExp, the sum in double), so the gradient is the reference
    // one.
    int m = reduce("max", x);
    int s = m;
    if (nodes[x].vec) {
      Node n{NodeKind::Reduce};
      n.tmpl = "sumexp_f64";
      n.args = {x, m};
      n.time = std::max(nodes[x].kind == NodeKind::Load ? 0 : nodes[x].time + 1,
                        avail(m));
      n.time += n.time % 2;
      if (nodes[x].kind != NodeKind::Load)
        nodes[x].stored = true;
      s = add(std::move(n));
    } else {
      s = expr("static_cast<double>(tcc_exp_exact($0 - $1))", {x, m}, false);
    }
    int e = expr("tcc_exp_exact($0 - $1)", {x, m}, true);
    if (!grad) {
      // Two partials per row: the row's loss and whether it counts (the
      // fins divide the sum of the first by that of the second).
      Node p{NodeKind::Partial};
      p.args = {s, pick(x, lab), m};
      std::string rowLoss = "std::log(static_cast<double>($0)) - "
                            "static_cast<double>($1 - $2)";
      if (S != 0.0) {
        // As KernelsLoss.cpp: the mean over classes of -log_softmax.
        p.args.push_back(reduce("sum", x));
        rowLoss = "std::log(static_cast<double>($0)) - " +
                  doubleLiteral(1.0 - S) +
                  " * static_cast<double>($1 - $2) - " + doubleLiteral(S) +
                  " * (static_cast<double>($3) / " + C +
                  ".0 - static_cast<double>($2))";
      }
      p.time = 0;
      for (int n : p.args)
        p.time = std::max(p.time, avail(n));
      p.time += p.time % 2;
      std::string slot =
          "tcc_partials[r * PARTIALS + " + std::to_string(partials);
      p.tmpl = slot + "] = " + ign + " ? 0.0 : " + rowLoss + "; " + slot +
               " + 1] = " + ign + " ? 0.0 : 1.0;";
      partialOut.push_back({-1, partials});
      partials += 2;
      set(0, add(std::move(p)));
      return success();
    }
    // a[0] is already the gradient per counted position (the rule divided
    // it by their count).
    int inv = expr("static_cast<float>(1.0 / $0)", {s}, false);
    int scale = a[0];
    int v = expr("($0 * $1 * $2)", {e, inv, scale}, true);
    if (S == 0.0) {
      set(0, expr("(" + ign + " ? 0.0f : ($j == $1 ? $0 - $2 : $0))",
                  {v, lab, scale}, true));
      return success();
    }
    int hit = expr("($0 * " + floatLiteral(1.0 - S) + ")", {scale}, false);
    int smooth =
        expr("($0 * " + floatLiteral(S / (double)d.cols) + ")", {scale}, false);
    set(0, expr("(" + ign + " ? 0.0f : ($j == $1 ? ($0 - $3) - $2 : $0 - $3))",
                {v, lab, hit, smooth}, true));
    return success();
  }
  return o->emitError("fused codegen: no code for '")
         << o->getName() << "' in a fused region";
}

bool KernelGraph::hasRowNodes() const {
  for (const Node &n : nodes)
    if (n.kind == NodeKind::Reduce || n.kind == NodeKind::Pick ||
        n.kind == NodeKind::Partial || n.kind == NodeKind::ColSum)
      return true;
  return false;
}

LogicalResult KernelGen::analyze() {
  Block &body = op.getBody().front();
  SmallVector<Operation *> members;
  for (Operation &o : body.without_terminator())
    if (!isa<ConstantOp>(o))
      members.push_back(&o);
  if (members.empty())
    return op.emitError("fused codegen: empty region");
  d = regionDomain(members);
  std::string why;
  if (!regionIsLegal(members, d, &why))
    return op.emitError("fused codegen: region cannot run as one kernel: ")
           << why;
  for (Operation &o : body.without_terminator())
    if (failed(lower(&o)))
      return failure();

  // Outputs.
  auto yield = cast<YieldOp>(body.getTerminator());
  outPad.assign(yield.getValues().size(), 0);
  for (auto [k, v] : llvm::enumerate(yield.getValues())) {
    Type elem = cast<ShapedType>(v.getType()).getElementType();
    if (!(elem.isF32() || elem.isBF16() || elem.isF16()))
      return op.emitError("fused codegen: result #")
             << k << " is " << elem << ", not f32, bf16 or f16";
    auto res = dyn_cast<OpResult>(v);
    if (!res)
      return op.emitError("fused codegen: result #")
             << k << " is a region argument";
    Layout l = *resultLayout(res.getOwner(), res.getResultNumber(), d);
    int n = valueNode.lookup(v);
    if (l == Layout::Column) {
      if (!elem.isF32())
        return op.emitError("fused codegen: column result #")
               << k << " is " << elem << ", not f32";
      colOut.push_back({(int)k, nodes[n].colSum});
      continue;
    }
    if (l == Layout::Scalar) {
      for (auto &p : partialOut)
        if (p.first < 0) {
          p.first = (int)k;
          break;
        }
      continue;
    }
    if (l == Layout::Padded)
      outPad[k] = padOf(res.getOwner());
    bool vec = (l == Layout::Full || l == Layout::Padded) && d.cols > 1;
    Node &x = nodes[n];
    if (x.kind == NodeKind::Load || x.kind == NodeKind::Const || x.vec != vec ||
        x.output >= 0 || x.half != halfOf(elem)) {
      Node c{NodeKind::Expr};
      c.tmpl = "$0";
      c.args = {n};
      c.vec = vec;
      c.half = halfOf(elem); // the value is exact in the output's type
      c.time = vec ? (x.time % 2 ? x.time : x.time + 1) : x.time + x.time % 2;
      nodes.push_back(c);
      n = (int)nodes.size() - 1;
    }
    if (vec)
      nodes[n].output = (int)k;
    else
      rowStores.push_back({n, (int)k});
  }

  // Which vectors live in memory: those a later time slot reads (reductions
  // and picks marked theirs when they were made).
  for (Node &n : nodes)
    if ((n.kind == NodeKind::Expr || n.kind == NodeKind::ColSum) && n.vec)
      for (int a : n.args)
        if (nodes[a].kind == NodeKind::Expr && nodes[a].vec &&
            nodes[a].time < n.time)
          nodes[a].stored = true;
  // A 16-bit output that a later slot reads also gets a scratch row of
  // floats, so that reads (and reductions) never go through its words.
  for (Node &n : nodes) {
    if (n.stored && n.kind == NodeKind::Expr &&
        (n.output < 0 || n.half != Half::None))
      n.scratch = scratch++;
    maxTime = std::max(maxTime, n.time);
  }
  // Row slices of the column sums (rt::columnSumSliceRows, which the
  // library kernels that sum columns share).
  if (colSums) {
    if (partials)
      return op.emitError(
          "fused codegen: a region with column sums has no loss");
    sliceRows = rt::columnSumSliceRows(d.rows);
  }
  findInPlace();
  return success();
}

/// Whether a wide CUDA rows kernel, which keeps no vectors between slots,
/// reads input `input` to recompute vector node `n` (CudaEmit.cpp's
/// recompute): a Load of it, or an expression over one that is no output
/// (an output is read back). Row scalars are registers.
static bool recomputeReads(const std::vector<Node> &nodes, int n, int input) {
  const Node &x = nodes[n];
  if (x.kind == NodeKind::Load)
    return x.input == input;
  if (x.kind != NodeKind::Expr || !x.vec || x.output >= 0)
    return false;
  for (int a : x.args)
    if (recomputeReads(nodes, a, input))
      return true;
  return false;
}

/// Output `output` may be written over input `input` when, row by row,
/// every read of an input element comes before the write of the output
/// element at the same address:
///  - the output is a vector written in one column loop (time T), and the
///    input is read only as whole vectors whose row r starts where the
///    output's row r starts (the same row pitch, so column j of both is one
///    address; a padded output's pad columns are never read as input);
///  - every slot that reads the input (a loop, a reduction or a pick, or,
///    in a wide CUDA rows kernel, a recomputation from it) runs before T,
///    or is loop T itself, whose reads of column j come before its store
///    of column j (the emitters store such outputs after everything else
///    of the loop body). Vectors of earlier slots are otherwise read from
///    scratch rows, lane arrays or outputs, not from the input.
/// Each row touches only its own row of both, so rows may run in any order
/// and in parallel.
bool KernelGen::inPlaceSafe(int output, int input) const {
  FusedOp f = op; // a handle; its accessors are not const
  auto out = cast<ShapedType>(f.getResult(output).getType());
  auto in = cast<ShapedType>(f.getInputs()[input].getType());
  if (d.cols <= 1 || out.getElementType() != in.getElementType() ||
      out.getNumElements() != in.getNumElements() ||
      !isa<FloatType>(in.getElementType()))
    return false;
  int T = -1;
  for (const Node &n : nodes)
    if (n.output == output && n.vec)
      T = n.time;
  if (T < 0)
    return false;
  std::string row = "(r * " + std::to_string(outStride(output)) + ")";
  for (const Node &n : nodes) {
    if (n.kind == NodeKind::Load) {
      if (n.input == input && (!n.vec || n.tmpl != row))
        return false;
      continue;
    }
    for (int a : n.args) {
      const Node &x = nodes[a];
      bool reads = x.kind == NodeKind::Load
                       ? x.input == input
                       : cudaRecomputes() && x.vec && x.time < n.time &&
                             recomputeReads(nodes, a, input);
      if (!reads)
        continue;
      bool inLoopT = n.time == T && n.vec && n.kind == NodeKind::Expr;
      if (n.time > T || (n.time == T && !inLoopT))
        return false;
    }
  }
  return true;
}

void KernelGen::findInPlace() {
  inPlace.clear();
  for (unsigned k = 0; k < op.getNumResults(); ++k)
    for (unsigned i = 0; i < op.getInputs().size(); ++i)
      if (inPlaceSafe((int)k, (int)i))
        inPlace.push_back({(int)k, (int)i});
}

/// The op's `in_place` attribute from the analysed pairs (none: removed).
static void setInPlace(FusedOp f, const KernelGraph &g) {
  SmallVector<int64_t> flat;
  for (auto [o, i] : g.inPlace)
    flat.append({o, i});
  if (flat.empty())
    f.removeInPlaceAttr();
  else
    f.setInPlace(flat);
}

namespace tcc::fusedgen {
std::string regionName(FusedOp f) {
  std::string name;
  llvm::SmallVector<StringRef> seen;
  for (Operation &inner : f.getBody().front().without_terminator()) {
    StringRef n = inner.getName().stripDialect();
    if (isa<ConstantOp>(inner) || isDataMovement(&inner) ||
        llvm::is_contained(seen, n))
      continue;
    seen.push_back(n);
    name += (name.empty() ? "" : "+") + n.str();
  }
  if (name.size() > 48)
    name = name.substr(0, 45) + "...";
  return name.empty() ? "copy" : name;
}
} // namespace tcc::fusedgen

namespace tcc {
FailureOr<std::string> generateFusedSource(ArrayRef<Operation *> fusedOps) {
  std::ostringstream os;
  os << ::tcc::fusedPrelude() << "\n";
  std::vector<int64_t> meta, offsets{0};
  std::vector<bool> hasFin;
  std::vector<std::string> names;
  // The function each kernel number calls: its own, or an earlier one's
  // with the same code (KernelDedup.h).
  std::vector<int64_t> fn;
  KernelDedup dedup;
  for (auto [i, o] : llvm::enumerate(fusedOps)) {
    auto f = cast<FusedOp>(o);
    f.setKernel(static_cast<int64_t>(i));
    KernelGen gen(f, (int)i);
    std::string code;
    std::vector<int64_t> m;
    if (failed(gen.run(code, m)))
      return failure();
    setInPlace(f, gen);
    int64_t same = dedup.find(code, (int64_t)i);
    fn.push_back(same >= 0 ? same : (int64_t)i);
    if (same < 0)
      os << code << "\n";
    hasFin.push_back(m[5] > 0 || m[8] > 0); // losses or column sums
    names.push_back(regionName(f));
    meta.insert(meta.end(), m.begin(), m.end());
    offsets.push_back((int64_t)meta.size());
  }
  size_t n = fusedOps.size();
  auto list = [&](auto &&item, size_t count) {
    std::string s = "{";
    for (size_t i = 0; i < count; ++i)
      s += (i ? ", " : "") + item(i);
    return s + (count ? "}" : "0}");
  };
  os << "typedef int (*tcc_fused_fn)(void *const *, int64_t, int64_t, float *, "
        "double *, int64_t *);\n"
        "typedef void (*tcc_fused_fin)(void *const *, const double *);\n";
  os << "extern \"C\" const int64_t tcc_fused_abi = " << ::tcc::rt::kFusedAbi
     << ";\n";
  os << "extern \"C\" const int64_t tcc_fused_count = " << n << ";\n";
  os << "extern \"C\" const tcc_fused_fn tcc_fused_fns[] = "
     << list([&](size_t i) { return "tcc_fused_" + std::to_string(fn[i]); }, n)
     << ";\n";
  os << "extern \"C\" const tcc_fused_fin tcc_fused_fins[] = "
     << list(
            [&](size_t i) {
              return hasFin[i] ? "tcc_fused_" + std::to_string(fn[i]) + "_fin"
                               : std::string("0");
            },
            n)
     << ";\n";
  os << "extern \"C\" const int64_t tcc_fused_meta_offsets[] = "
     << list([&](size_t i) { return std::to_string(offsets[i]); },
             offsets.size())
     << ";\n";
  os << "extern \"C\" const char *const tcc_fused_names[] = "
     << list([&](size_t i) { return "\"" + names[i] + "\""; }, n) << ";\n";
  os << "extern \"C\" const int64_t tcc_fused_meta[] = "
     << list([&](size_t i) { return std::to_string(meta[i]); }, meta.size())
     << ";\n";
  return os.str();
}

FailureOr<std::string> generateFusedSource(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](FusedOp f) { ops.push_back(f); });
  return generateFusedSource(ops);
}
} // namespace tcc

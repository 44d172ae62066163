//===- OnnxOpsRecurrent.cpp - Builders: RNN, GRU, LSTM --------------------===//
//
// tcc compiles static shapes, so a recurrent node's sequence length is known
// at import: the recurrence is unrolled here into matmuls, slices and
// element-wise ops that already have gradients, CPU and CUDA kernels,
// fusion rules and memory planning, instead of a new op with a loop inside.
// The input projection X·W^T of every timestep and both directions is one
// [T·B, I] x [I, D·G·H] matmul (G gates, D directions); each step then adds
// one H·R^T product and the gate arithmetic, in ONNX's gate orders (RNN: i;
// GRU: z, r, h; LSTM: i, o, f, c; peepholes i, o, f).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include "llvm/ADT/StringExtras.h"

#include <optional>
#include <string>

using namespace mlir;
using namespace mlir::tcc;

namespace {

enum class CellKind { Rnn, Gru, Lstm };

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// One activation function: ONNX's name in lower case and its parameters.
struct Activation {
  std::string fn;
  float alpha = 0.0f, beta = 0.0f;
};

/// The node's attributes and inputs, normalized: X as [T, B, I], initial
/// states as [D, B, H].
struct Recurrent {
  CellKind kind;
  int64_t gates; // G
  int64_t seq, batch, inputSize, hidden, dirs;
  bool reverseOnly = false, batchFirst = false;
  std::optional<float> clip;
  /// Per direction, the activation functions (lower case): RNN f; GRU f, g;
  /// LSTM f, g, h.
  SmallVector<SmallVector<Activation, 3>, 2> acts;
  Value x, w, r, bias, h0, c0, peep;
  bool linearBeforeReset = false, inputForget = false;
};

/// `v` sliced along `axis` to [start, start + size).
FailureOr<Value> take(NodeImporter &node, Value v, int64_t axis, int64_t start,
                      int64_t size) {
  ArrayRef<int64_t> shape = typeOf(v).getShape();
  SmallVector<int64_t> starts(shape.size(), 0), sizes(shape),
      steps(shape.size(), 1);
  starts[axis] = start;
  sizes[axis] = size;
  if (start == 0 && size == shape[axis])
    return v;
  return node.create<SliceOp>(v, ArrayRef<int64_t>(starts),
                              ArrayRef<int64_t>(sizes),
                              ArrayRef<int64_t>(steps));
}

/// Row `d` of a per-direction tensor [D, ...], as [...].
FailureOr<Value> direction(NodeImporter &node, Value v, int64_t d) {
  FailureOr<Value> s = take(node, v, 0, d, 1);
  if (failed(s))
    return failure();
  return node.reshape(*s, typeOf(v).getShape().drop_front());
}

template <typename OpTy>
FailureOr<Value> binary(NodeImporter &node, FailureOr<Value> a,
                        FailureOr<Value> b) {
  if (failed(a) || failed(b))
    return failure();
  return node.create<OpTy>(*a, *b);
}

/// Which parameters activation `fn` reads (ONNX's list for recurrent
/// layers) and ONNX's defaults for them: those of the operator of the same
/// name. Affine and ScaledTanh have no such operator, and ThresholdedRelu's
/// default differs between runtimes, so they need their values given.
struct ActivationParams {
  const char *fn;
  bool alpha, beta;
  std::optional<float> alphaDefault, betaDefault;
};
const ActivationParams kActivations[] = {
    {"sigmoid", false, false, {}, {}},
    {"tanh", false, false, {}, {}},
    {"relu", false, false, {}, {}},
    {"softsign", false, false, {}, {}},
    {"softplus", false, false, {}, {}},
    {"leakyrelu", true, false, 0.01f, {}},
    {"elu", true, false, 1.0f, {}},
    {"hardsigmoid", true, true, 0.2f, 0.5f},
    {"thresholdedrelu", true, false, {}, {}},
    {"affine", true, true, {}, {}},
    {"scaledtanh", true, true, {}, {}},
};

/// fn(clip(x)): ONNX clips the input of every activation when `clip` is set.
FailureOr<Value> activate(NodeImporter &node, const Recurrent &rec,
                          const Activation &act, FailureOr<Value> x) {
  if (failed(x))
    return failure();
  Value v = *x;
  OpBuilder &b = node.builder();
  auto unaryFn = [&](StringRef fn, double alpha,
                     double beta) -> FailureOr<Value> {
    return node.create<UnaryFnOp>(v, b.getStringAttr(fn),
                                  b.getF64FloatAttr(alpha),
                                  b.getF64FloatAttr(beta));
  };
  if (rec.clip) {
    FailureOr<Value> c = unaryFn("clip", -*rec.clip, *rec.clip);
    if (failed(c))
      return failure();
    v = *c;
  }
  StringRef fn = act.fn;
  if (fn == "sigmoid")
    return node.create<SigmoidOp>(v);
  if (fn == "tanh")
    return node.create<TanhOp>(v);
  if (fn == "relu")
    return node.create<ReluOp>(v);
  if (fn == "softsign" || fn == "softplus" || fn == "elu")
    return unaryFn(fn, act.alpha, 0.0);
  if (fn == "leakyrelu")
    return unaryFn("leaky_relu", act.alpha, 0.0);
  if (fn == "thresholdedrelu")
    return unaryFn("thresholded_relu", act.alpha, 0.0);
  if (fn == "hardsigmoid")
    return unaryFn("hard_sigmoid", act.alpha, act.beta);
  if (fn == "affine")
    return binary<AddOp>(node, node.create<MulOp>(v, node.scalar(act.alpha)),
                         node.scalar(act.beta));
  // ScaledTanh: alpha * tanh(beta * x).
  FailureOr<Value> scaled = node.create<MulOp>(v, node.scalar(act.beta));
  if (failed(scaled))
    return failure();
  return binary<MulOp>(node, node.create<TanhOp>(*scaled),
                       node.scalar(act.alpha));
}

/// Reads and checks attributes and inputs into `rec`.
LogicalResult parse(NodeImporter &node, Recurrent &rec) {
  static const char *kDefaults[][3] = {
      {"tanh", "", ""}, {"sigmoid", "tanh", ""}, {"sigmoid", "tanh", "tanh"}};
  int64_t numActs = rec.kind == CellKind::Rnn   ? 1
                    : rec.kind == CellKind::Gru ? 2
                                                : 3;
  std::string dir = "forward";
  if (const onnx::AttributeProto *a = node.attr("direction"))
    dir = a->s();
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return node.emitError() << "attribute 'direction' = '" << dir
                            << "' is not forward, reverse or bidirectional";
  rec.dirs = dir == "bidirectional" ? 2 : 1;
  rec.reverseOnly = dir == "reverse";

  FailureOr<int64_t> layout = node.intAttr("layout", 0);
  FailureOr<int64_t> hidden = node.intAttr("hidden_size", -1);
  FailureOr<int64_t> lbr = node.intAttr("linear_before_reset", 0);
  FailureOr<int64_t> inputForget = node.intAttr("input_forget", 0);
  if (failed(layout) || failed(hidden) || failed(lbr) || failed(inputForget))
    return failure();
  if (*layout != 0 && *layout != 1)
    return node.emitError()
           << "attribute 'layout' = " << *layout << " is not 0 or 1";
  rec.batchFirst = *layout == 1;
  rec.linearBeforeReset = *lbr != 0;
  rec.inputForget = *inputForget != 0;
  if (node.attr("clip")) {
    FailureOr<float> clip = node.floatAttr("clip", 0.0f);
    if (failed(clip))
      return failure();
    rec.clip = *clip;
  }

  // Activations: numActs per direction, forward's first.
  SmallVector<std::string> names;
  if (const onnx::AttributeProto *a = node.attr("activations"))
    for (const std::string &s : a->strings())
      names.push_back(llvm::StringRef(s).lower());
  if (names.empty())
    for (int64_t d = 0; d < rec.dirs; ++d)
      for (int64_t i = 0; i < numActs; ++i)
        names.push_back(kDefaults[numActs - 1][i]);
  if ((int64_t)names.size() != numActs * rec.dirs)
    return node.emitError() << "attribute 'activations' has " << names.size()
                            << " functions; expected " << numActs * rec.dirs
                            << " (" << numActs << " per direction)";
  // activation_alpha and activation_beta are consumed in order by the
  // functions that take the parameter, as onnxruntime reads them.
  SmallVector<float> alphas, betas;
  if (const onnx::AttributeProto *a = node.attr("activation_alpha"))
    alphas.assign(a->floats().begin(), a->floats().end());
  if (const onnx::AttributeProto *a = node.attr("activation_beta"))
    betas.assign(a->floats().begin(), a->floats().end());
  size_t nextAlpha = 0, nextBeta = 0;
  SmallVector<Activation> parsed;
  for (const std::string &n : names) {
    const ActivationParams *params = nullptr;
    for (const ActivationParams &p : kActivations)
      if (n == p.fn)
        params = &p;
    if (!params)
      return node.emitUnsupported("activation " + n)
             << "activation '" << n
             << "' is not supported; tcc supports Sigmoid, Tanh, Relu, "
                "Softsign, Softplus, LeakyRelu, Elu, HardSigmoid, "
                "ThresholdedRelu, Affine and ScaledTanh";
    Activation act{n};
    auto param = [&](bool used, SmallVector<float> &list, size_t &next,
                     std::optional<float> dflt, StringRef attrName,
                     float &out) -> LogicalResult {
      if (!used)
        return success();
      if (next < list.size()) {
        out = list[next++];
        return success();
      }
      if (dflt) {
        out = *dflt;
        return success();
      }
      return node.emitUnsupported("activation " + n + " without " +
                                  attrName.str())
             << "activation '" << n << "' takes its parameter from '"
             << attrName << "', which has no value left for it; tcc does "
             << "not guess a default";
    };
    if (failed(param(params->alpha, alphas, nextAlpha, params->alphaDefault,
                     "activation_alpha", act.alpha)) ||
        failed(param(params->beta, betas, nextBeta, params->betaDefault,
                     "activation_beta", act.beta)))
      return failure();
    parsed.push_back(act);
  }
  for (int64_t d = 0; d < rec.dirs; ++d)
    rec.acts.emplace_back(parsed.begin() + d * numActs,
                          parsed.begin() + (d + 1) * numActs);

  FailureOr<SmallVector<Value>> in = node.inputs(3);
  if (failed(in))
    return failure();
  rec.x = (*in)[0];
  rec.w = (*in)[1];
  rec.r = (*in)[2];
  ArrayRef<int64_t> xs = typeOf(rec.x).getShape();
  if (xs.size() != 3)
    return node.emitError() << "X must have rank 3, got " << shapeStr(xs);
  rec.seq = xs[rec.batchFirst ? 1 : 0];
  if (rec.seq < 1)
    return node.emitError() << "X has no timesteps: " << shapeStr(xs);
  rec.batch = xs[rec.batchFirst ? 0 : 1];
  rec.inputSize = xs[2];
  ArrayRef<int64_t> rs = typeOf(rec.r).getShape();
  if (rs.size() != 3)
    return node.emitError() << "R must have rank 3, got " << shapeStr(rs);
  rec.hidden = *hidden >= 0 ? *hidden : rs[2];
  int64_t gh = rec.gates * rec.hidden, d = rec.dirs, h = rec.hidden;
  auto expect = [&](Value v, ArrayRef<int64_t> shape,
                    StringRef what) -> LogicalResult {
    if (typeOf(v).getShape() == shape)
      return success();
    return node.emitError()
           << what << " has shape " << shapeStr(typeOf(v).getShape())
           << "; expected " << shapeStr(shape);
  };
  if (failed(expect(rec.w, {d, gh, rec.inputSize}, "W")) ||
      failed(expect(rec.r, {d, gh, h}, "R")))
    return failure();
  if (node.hasInput(3)) {
    FailureOr<Value> b = node.input(3);
    if (failed(b) || failed(expect(*b, {d, 2 * gh}, "B")))
      return failure();
    rec.bias = *b;
  }
  // sequence_lens: the unrolled graph runs every batch entry for all T steps,
  // which is its meaning only when every length is T.
  if (node.hasInput(4)) {
    DenseElementsAttr lens = node.constantInput(4);
    if (!lens)
      return node.emitUnsupported("sequence_lens not constant")
             << "input 'sequence_lens' is not a constant; tcc unrolls the "
                "recurrence at import and needs every length to be the "
                "sequence length "
             << rec.seq;
    if (!lens.getElementType().isInteger())
      return node.emitError() << "input 'sequence_lens' must be integers";
    for (const APInt &v : lens.getValues<APInt>())
      if (v.getSExtValue() != rec.seq)
        return node.emitUnsupported("sequence_lens not the sequence length")
               << "input 'sequence_lens' holds " << v.getSExtValue()
               << "; tcc supports only lengths equal to the sequence length "
               << rec.seq;
  }
  // Initial states and peepholes, as [D, B, H] whatever the layout.
  auto state = [&](unsigned i, StringRef what, Value &out) -> LogicalResult {
    if (!node.hasInput(i))
      return success();
    FailureOr<Value> v = node.input(i);
    if (failed(v))
      return failure();
    if (rec.batchFirst) {
      if (failed(expect(*v, {rec.batch, d, h}, what)))
        return failure();
      v = node.create<TransposeOp>(*v, ArrayRef<int64_t>{1, 0, 2});
      if (failed(v))
        return failure();
    } else if (failed(expect(*v, {d, rec.batch, h}, what))) {
      return failure();
    }
    out = *v;
    return success();
  };
  if (failed(state(5, "initial_h", rec.h0)))
    return failure();
  if (rec.kind == CellKind::Lstm) {
    if (failed(state(6, "initial_c", rec.c0)))
      return failure();
    if (node.hasInput(7)) {
      FailureOr<Value> p = node.input(7);
      if (failed(p) || failed(expect(*p, {d, 3 * h}, "P")))
        return failure();
      rec.peep = *p;
    }
  }
  if (rec.batchFirst) {
    FailureOr<Value> t =
        node.create<TransposeOp>(rec.x, ArrayRef<int64_t>{1, 0, 2});
    if (failed(t))
      return failure();
    rec.x = *t;
  }
  return success();
}

/// The state of one direction between steps; a null value stands for the
/// zeros ONNX starts with, so that the first step skips their products.
struct Carry {
  Value h, c;
};

/// One direction's recurrent weights, sliced once rather than at every
/// step (each slice's gradient is a zero pad of the whole tensor, so
/// per-step slices would cost T pads). `r` is R as [G·H, H]; GRU without
/// linear_before_reset also has its z/r rows `rZR` and h rows `rH`; `rbh` is
/// GRU's recurrent h-gate bias with linear_before_reset; `peep` LSTM's
/// peepholes i, o, f as [H] each (null without P).
struct Weights {
  Value r, rZR, rH, rbh;
  Value peep[3];
};

/// One step of one direction: the new carry from the step's input
/// projection `xt` ([B, G·H], biases included) and the previous carry.
FailureOr<Carry> step(NodeImporter &node, const Recurrent &rec,
                      ArrayRef<Activation> acts, Value xt, const Weights &wt,
                      Carry prev) {
  int64_t h = rec.hidden;
  Value rd = wt.r, rbh = wt.rbh;
  auto gate = [&](Value v, int64_t k) { return take(node, v, 1, k * h, h); };
  auto recur = [&](Value hv, Value rPart) -> FailureOr<Value> {
    return node.create<MatmulOp>(hv, rPart, false, true);
  };
  if (rec.kind == CellKind::Rnn) {
    FailureOr<Value> pre =
        prev.h ? binary<AddOp>(node, xt, recur(prev.h, rd)) : xt;
    FailureOr<Value> hn = activate(node, rec, acts[0], pre);
    if (failed(hn))
      return failure();
    return Carry{*hn, {}};
  }
  if (rec.kind == CellKind::Gru) {
    // z and r read H·[Rz; Rr]^T; the h gate reads r ⊙ H (or, with
    // linear_before_reset, r ⊙ (H·Rh^T + Rbh)).
    FailureOr<Value> xzr = take(node, xt, 1, 0, 2 * h);
    FailureOr<Value> xh = gate(xt, 2);
    if (failed(xzr) || failed(xh))
      return failure();
    FailureOr<Value> hr; // H·R^T over all three gates, or z and r only.
    if (prev.h) {
      hr = recur(prev.h, rec.linearBeforeReset ? rd : wt.rZR);
      if (failed(hr))
        return failure();
    }
    FailureOr<Value> zr =
        prev.h ? binary<AddOp>(node, *xzr, take(node, *hr, 1, 0, 2 * h))
               : FailureOr<Value>(*xzr);
    FailureOr<Value> zrAct = activate(node, rec, acts[0], zr);
    if (failed(zrAct))
      return failure();
    FailureOr<Value> z = gate(*zrAct, 0), r = gate(*zrAct, 1);
    if (failed(z) || failed(r))
      return failure();
    FailureOr<Value> hPre = *xh;
    if (prev.h) {
      FailureOr<Value> inner;
      if (rec.linearBeforeReset) {
        FailureOr<Value> hh = gate(*hr, 2);
        if (failed(hh))
          return failure();
        inner = rbh ? binary<AddOp>(node, *hh, rbh) : hh;
        inner = binary<MulOp>(node, *r, inner);
      } else {
        FailureOr<Value> rh = binary<MulOp>(node, *r, prev.h);
        if (failed(rh))
          return failure();
        inner = recur(*rh, wt.rH);
      }
      hPre = binary<AddOp>(node, *xh, inner);
    } else if (rec.linearBeforeReset && rbh) {
      // H = 0: r ⊙ (0 + Rbh).
      hPre = binary<AddOp>(node, *xh, binary<MulOp>(node, *r, rbh));
    }
    FailureOr<Value> hc = activate(node, rec, acts[1], hPre);
    if (failed(hc))
      return failure();
    // H = (1 - z) ⊙ h~ + z ⊙ H_prev = h~ + z ⊙ (H_prev - h~).
    FailureOr<Value> diff =
        prev.h ? binary<SubOp>(node, prev.h, *hc) : node.create<NegOp>(*hc);
    FailureOr<Value> hn =
        binary<AddOp>(node, *hc, binary<MulOp>(node, *z, diff));
    if (failed(hn))
      return failure();
    return Carry{*hn, {}};
  }
  // LSTM: gates i, o, f, c; peepholes i, o, f.
  FailureOr<Value> pre = prev.h ? binary<AddOp>(node, xt, recur(prev.h, rd))
                                : FailureOr<Value>(xt);
  if (failed(pre))
    return failure();
  auto peephole = [&](FailureOr<Value> g, int64_t k,
                      Value c) -> FailureOr<Value> {
    if (!wt.peep[k] || !c)
      return g;
    return binary<AddOp>(node, g, binary<MulOp>(node, wt.peep[k], c));
  };
  FailureOr<Value> i =
      activate(node, rec, acts[0], peephole(gate(*pre, 0), 0, prev.c));
  FailureOr<Value> f;
  if (rec.inputForget)
    f = binary<SubOp>(node, node.scalar(1.0f), i);
  else
    f = activate(node, rec, acts[0], peephole(gate(*pre, 2), 2, prev.c));
  FailureOr<Value> cc = activate(node, rec, acts[1], gate(*pre, 3));
  FailureOr<Value> c = binary<MulOp>(node, i, cc);
  if (prev.c)
    c = binary<AddOp>(node, binary<MulOp>(node, f, prev.c), c);
  if (failed(c))
    return failure();
  FailureOr<Value> o =
      activate(node, rec, acts[0], peephole(gate(*pre, 1), 1, *c));
  FailureOr<Value> hn =
      binary<MulOp>(node, o, activate(node, rec, acts[2], *c));
  if (failed(hn))
    return failure();
  return Carry{*hn, *c};
}

/// Concatenates `parts` along `axis` (one part: itself).
FailureOr<Value> join(NodeImporter &node, ArrayRef<Value> parts, int64_t axis) {
  if (parts.size() == 1)
    return parts[0];
  return node.create<ConcatOp>(ValueRange(parts), uint64_t(axis));
}

/// Binds a [D, B, H] final state to output `i` ([B, D, H] with layout 1).
LogicalResult bindFinal(NodeImporter &node, const Recurrent &rec, unsigned i,
                        ArrayRef<Value> perDir) {
  SmallVector<Value> parts;
  for (Value v : perDir) {
    FailureOr<Value> r = node.reshape(v, {1, rec.batch, rec.hidden});
    if (failed(r))
      return failure();
    parts.push_back(*r);
  }
  FailureOr<Value> y = join(node, parts, 0);
  if (succeeded(y) && rec.batchFirst)
    y = node.create<TransposeOp>(*y, ArrayRef<int64_t>{1, 0, 2});
  if (failed(y))
    return failure();
  node.setOutput(i, *y);
  return success();
}

bool wants(NodeImporter &node, unsigned i) {
  return i < (unsigned)node.proto().output_size() &&
         !node.proto().output(i).empty();
}

LogicalResult importRecurrent(NodeImporter &node, CellKind kind) {
  Recurrent rec;
  rec.kind = kind;
  rec.gates = kind == CellKind::Rnn ? 1 : kind == CellKind::Gru ? 3 : 4;
  if (failed(parse(node, rec)))
    return failure();
  int64_t t = rec.seq, b = rec.batch, h = rec.hidden, g = rec.gates,
          d = rec.dirs, gh = g * h;

  // X·W^T + biases for every step and direction at once: [T, B, D·G·H].
  FailureOr<Value> x2 = node.reshape(rec.x, {t * b, rec.inputSize});
  FailureOr<Value> w2 = node.reshape(rec.w, {d * gh, rec.inputSize});
  if (failed(x2) || failed(w2))
    return failure();
  FailureOr<Value> xw = node.create<MatmulOp>(*x2, *w2, false, true);
  SmallVector<Value, 2> rbh(d); // GRU's Rbh with linear_before_reset
  if (succeeded(xw) && rec.bias) {
    // Wb + Rb, except GRU's Rbh with linear_before_reset: it sits inside
    // r ⊙ (...) and is added per step.
    FailureOr<Value> wb = take(node, rec.bias, 1, 0, gh);
    FailureOr<Value> rb = take(node, rec.bias, 1, gh, gh);
    if (failed(wb) || failed(rb))
      return failure();
    FailureOr<Value> bsum = binary<AddOp>(node, *wb, *rb);
    if (succeeded(bsum) && kind == CellKind::Gru && rec.linearBeforeReset) {
      // [Wbz + Rbz, Wbr + Rbr, Wbh]; Rbh is kept per direction for the step.
      FailureOr<Value> zr = take(node, *bsum, 1, 0, 2 * h);
      FailureOr<Value> wbh = take(node, *wb, 1, 2 * h, h);
      FailureOr<Value> rh = take(node, *rb, 1, 2 * h, h);
      if (failed(zr) || failed(wbh) || failed(rh))
        return failure();
      for (int64_t k = 0; k < d; ++k) {
        FailureOr<Value> row = direction(node, *rh, k);
        if (failed(row))
          return failure();
        rbh[k] = *row;
      }
      bsum = node.create<ConcatOp>(ValueRange{*zr, *wbh}, uint64_t(1));
    }
    if (failed(bsum))
      return failure();
    FailureOr<Value> flat = node.reshape(*bsum, {d * gh});
    xw = binary<AddOp>(node, xw, flat);
  }
  if (failed(xw))
    return failure();
  FailureOr<Value> xw3 = node.reshape(*xw, {t, b, d * gh});
  if (failed(xw3))
    return failure();

  // The recurrence, direction by direction; hs[k][s] is H after time s.
  SmallVector<SmallVector<Value>, 2> hs(d, SmallVector<Value>(t));
  SmallVector<Value, 2> lastH(d), lastC(d);
  for (int64_t k = 0; k < d; ++k) {
    bool reverse = rec.reverseOnly || k == 1;
    Weights wt;
    wt.rbh = rbh[k];
    FailureOr<Value> rd = direction(node, rec.r, k);
    if (failed(rd))
      return failure();
    wt.r = *rd;
    if (kind == CellKind::Gru && !rec.linearBeforeReset) {
      FailureOr<Value> zr = take(node, *rd, 0, 0, 2 * h);
      FailureOr<Value> rh = take(node, *rd, 0, 2 * h, h);
      if (failed(zr) || failed(rh))
        return failure();
      wt.rZR = *zr;
      wt.rH = *rh;
    }
    if (rec.peep) {
      FailureOr<Value> p = direction(node, rec.peep, k);
      if (failed(p))
        return failure();
      for (int64_t j = 0; j < 3; ++j) {
        FailureOr<Value> pj = take(node, *p, 0, j * h, h);
        if (failed(pj))
          return failure();
        wt.peep[j] = *pj;
      }
    }
    // This direction's columns of X·W^T, [T, B, G·H]: slicing one axis at a
    // time keeps each gradient a sum of pads tiling one axis, which the
    // canonicalizer turns into a concat (SumOfPadsIsConcat) instead of T
    // full-size pads.
    FailureOr<Value> xwd = take(node, *xw3, 2, k * gh, gh);
    if (failed(xwd))
      return failure();
    Carry carry;
    if (rec.h0) {
      FailureOr<Value> v = direction(node, rec.h0, k);
      if (failed(v))
        return failure();
      carry.h = *v;
    }
    if (rec.c0) {
      FailureOr<Value> v = direction(node, rec.c0, k);
      if (failed(v))
        return failure();
      carry.c = *v;
    }
    for (int64_t n = 0; n < t; ++n) {
      int64_t s = reverse ? t - 1 - n : n;
      // This step's and direction's block of X·W^T, [B, G·H].
      FailureOr<Value> xs = take(node, *xwd, 0, s, 1);
      if (succeeded(xs))
        xs = node.reshape(*xs, {b, gh});
      if (failed(xs))
        return failure();
      FailureOr<Carry> next = step(node, rec, rec.acts[k], *xs, wt, carry);
      if (failed(next))
        return failure();
      carry = *next;
      hs[k][s] = carry.h;
    }
    lastH[k] = carry.h;
    lastC[k] = carry.c;
  }

  // Y: [T, D, B, H], or [B, T, D, H] with layout 1.
  if (wants(node, 0)) {
    SmallVector<Value> steps;
    for (int64_t s = 0; s < t; ++s)
      for (int64_t k = 0; k < d; ++k) {
        FailureOr<Value> r = node.reshape(hs[k][s], {1, 1, b, h});
        if (failed(r))
          return failure();
        steps.push_back(*r);
      }
    // Time-major pieces [1, 1, B, H]: join directions, then time.
    SmallVector<Value> perTime;
    for (int64_t s = 0; s < t; ++s) {
      FailureOr<Value> j =
          join(node, ArrayRef<Value>(steps).slice(s * d, d), 1);
      if (failed(j))
        return failure();
      perTime.push_back(*j);
    }
    FailureOr<Value> y = join(node, perTime, 0);
    if (succeeded(y) && rec.batchFirst)
      y = node.create<TransposeOp>(*y, ArrayRef<int64_t>{2, 0, 1, 3});
    if (failed(y))
      return failure();
    node.setOutput(0, *y);
  }
  if (wants(node, 1) && failed(bindFinal(node, rec, 1, lastH)))
    return failure();
  if (kind == CellKind::Lstm && wants(node, 2)) {
    // T >= 1, so every direction has a cell state by now.
    if (failed(bindFinal(node, rec, 2, lastC)))
      return failure();
  }
  return success();
}

} // namespace

// RNN 7 (output_sequence dropped), 14 (layout), 22 types.
LogicalResult mlir::tcc::importRNN(NodeImporter &node) {
  return importRecurrent(node, CellKind::Rnn);
}

// GRU 7 (output_sequence dropped), 14 (layout), 22 types.
LogicalResult mlir::tcc::importGRU(NodeImporter &node) {
  return importRecurrent(node, CellKind::Gru);
}

// LSTM 7 (output_sequence dropped), 14 (layout), 22 types.
LogicalResult mlir::tcc::importLSTM(NodeImporter &node) {
  return importRecurrent(node, CellKind::Lstm);
}

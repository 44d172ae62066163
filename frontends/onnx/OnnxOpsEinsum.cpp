//===- OnnxOpsEinsum.cpp - Builder: Einsum as transposes and matmuls ------===//
//
// Einsum is lowered at import into ops tcc already differentiates and runs on
// every backend: a repeated label within one operand (a diagonal) is a
// product with an identity mask and a sum, labels only one operand has and
// the output lacks are summed first, and operands are contracted left to
// right as one batched matmul each ([batch, kept, summed] x [batch, summed,
// kept]), so the contractions transformers write ("bhqd,bhkd->bhqk") become
// the same GEMMs as their MatMul form.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxFold.h"
#include "frontends/onnx/OnnxGraph.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace mlir::tcc;

namespace {
/// A label: a letter's character code, or kEllipsis + k for the k-th
/// dimension an ellipsis stands for (aligned from the right, as NumPy
/// broadcasts them).
using Label = int;
constexpr Label kEllipsis = 256;

/// One operand (or the accumulated result) with a label per dimension.
struct Term {
  Value value;
  SmallVector<Label> labels;
};

/// The parsed equation: one label list per input and the output's.
struct Equation {
  SmallVector<SmallVector<Label>> inputs;
  SmallVector<Label> output;
};
} // namespace

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

static bool isLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/// Splits one term ("b...ij") into letters around at most one ellipsis; the
/// ellipsis position is -1 when absent.
static LogicalResult parseTerm(NodeImporter &node, StringRef text,
                               SmallVectorImpl<char> &letters,
                               int &ellipsisAt) {
  ellipsisAt = -1;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i).starts_with("...")) {
      if (ellipsisAt >= 0)
        return node.emitError()
               << "equation term '" << text << "' has more than one ellipsis";
      ellipsisAt = letters.size();
      i += 3;
      continue;
    }
    if (!isLetter(text[i]))
      return node.emitError()
             << "equation term '" << text << "' has the character '" << text[i]
             << "'; labels are letters a-z, A-Z";
    letters.push_back(text[i++]);
  }
  return success();
}

/// Expands a term to one label per dimension of a rank-`rank` operand, or
/// of `ellipsisRank` dimensions for the ellipsis of the output.
static SmallVector<Label> expandTerm(ArrayRef<char> letters, int ellipsisAt,
                                     int64_t ellipsisDims,
                                     int64_t ellipsisRank) {
  SmallVector<Label> labels;
  for (int i = 0; i <= (int)letters.size(); ++i) {
    if (i == ellipsisAt)
      for (int64_t k = ellipsisRank - ellipsisDims; k < ellipsisRank; ++k)
        labels.push_back(kEllipsis + k);
    if (i < (int)letters.size())
      labels.push_back(letters[i]);
  }
  return labels;
}

static FailureOr<Equation> parseEquation(NodeImporter &node, StringRef equation,
                                         ArrayRef<Value> operands) {
  std::string compact;
  for (char c : equation)
    if (c != ' ')
      compact.push_back(c);
  StringRef text(compact);
  auto [lhs, rhs] = text.split("->");
  bool explicitOutput = text.contains("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != operands.size())
    return node.emitError()
           << "equation '" << equation << "' has " << terms.size()
           << " input terms for " << operands.size() << " inputs";
  Equation eq;
  int64_t ellipsisRank = 0;
  std::map<Label, int> uses;
  for (auto [term, operand] : llvm::zip(terms, operands)) {
    SmallVector<char> letters;
    int at;
    if (failed(parseTerm(node, term, letters, at)))
      return failure();
    int64_t rank = typeOf(operand).getRank();
    int64_t dims = rank - (int64_t)letters.size();
    if (dims < 0 || (at < 0 && dims != 0))
      return node.emitError()
             << "equation term '" << term << "' names " << letters.size()
             << " dimensions, its input has rank " << rank;
    ellipsisRank = std::max(ellipsisRank, dims);
    eq.inputs.push_back(expandTerm(letters, at, dims, dims));
    for (char c : letters)
      ++uses[c];
  }
  // Re-number ellipsis labels so that they align from the right.
  for (SmallVector<Label> &labels : eq.inputs) {
    int64_t dims =
        llvm::count_if(labels, [](Label l) { return l >= kEllipsis; });
    for (Label &l : labels)
      if (l >= kEllipsis)
        l += ellipsisRank - dims;
  }
  if (explicitOutput) {
    SmallVector<char> letters;
    int at;
    if (failed(parseTerm(node, rhs, letters, at)))
      return failure();
    if (at < 0 && ellipsisRank > 0)
      return node.emitError()
             << "equation '" << equation
             << "' has an ellipsis in its inputs but not in its output";
    eq.output =
        expandTerm(letters, at, at < 0 ? 0 : ellipsisRank, ellipsisRank);
    for (char c : letters) {
      if (!uses.count(c))
        return node.emitError()
               << "output label '" << c << "' is in no input term of '"
               << equation << "'";
      if (llvm::count(letters, c) > 1)
        return node.emitError() << "output label '" << c
                                << "' appears twice in '" << equation << "'";
    }
  } else {
    // Implicit output: the broadcast dimensions, then the letters used once,
    // in alphabetical order.
    for (int64_t k = 0; k < ellipsisRank; ++k)
      eq.output.push_back(kEllipsis + k);
    for (auto [label, count] : uses)
      if (count == 1)
        eq.output.push_back(label);
  }
  return eq;
}

/// Labels any of `terms` still hold.
static bool usedBy(Label l, ArrayRef<Term> terms) {
  return llvm::any_of(
      terms, [&](const Term &t) { return llvm::is_contained(t.labels, l); });
}

static FailureOr<Value> transposeTo(NodeImporter &node, Term &term,
                                    ArrayRef<Label> order) {
  SmallVector<int64_t> perm;
  for (Label l : order)
    perm.push_back(llvm::find(term.labels, l) - term.labels.begin());
  if (TransposeOp::isIdentityPerm(perm))
    return term.value;
  return node.create<TransposeOp>(term.value, ArrayRef<int64_t>(perm));
}

/// Takes the diagonal of the first label `term` repeats: multiplies by an
/// identity over the two dimensions and sums the second away.
static LogicalResult takeDiagonal(NodeImporter &node, Term &term, bool &done) {
  done = true;
  ArrayRef<int64_t> shape = typeOf(term.value).getShape();
  for (size_t p = 0; p < term.labels.size(); ++p) {
    for (size_t q = p + 1; q < term.labels.size(); ++q) {
      if (term.labels[p] != term.labels[q])
        continue;
      int64_t n = shape[p];
      if (shape[q] != n)
        return node.emitError() << "a repeated label spans dimensions of sizes "
                                << n << " and " << shape[q];
      SmallVector<int64_t> maskShape(shape.size(), 1);
      maskShape[p] = maskShape[q] = n;
      SmallVector<double> eye(n * n, 0.0);
      for (int64_t i = 0; i < n; ++i)
        eye[i * n + i] = 1.0;
      auto type =
          RankedTensorType::get(maskShape, Float32Type::get(node.context()));
      Value mask = ConstantOp::create(node.builder(), node.loc(),
                                      fold::fromFloats(type, eye));
      FailureOr<Value> masked = node.create<MulOp>(term.value, mask);
      if (failed(masked))
        return failure();
      FailureOr<Value> summed = node.create<ReduceSumOp>(
          *masked, ArrayRef<int64_t>{(int64_t)q}, false);
      if (failed(summed))
        return failure();
      term.value = *summed;
      term.labels.erase(term.labels.begin() + q);
      done = false;
      return success();
    }
  }
  return success();
}

/// Sums the dimensions of `term` whose labels nothing else needs.
static LogicalResult sumUnneeded(NodeImporter &node, Term &term,
                                 ArrayRef<Term> others,
                                 ArrayRef<Label> output) {
  SmallVector<int64_t> axes;
  SmallVector<Label> kept;
  for (auto [axis, l] : llvm::enumerate(term.labels)) {
    if (llvm::is_contained(output, l) || usedBy(l, others))
      kept.push_back(l);
    else
      axes.push_back(axis);
  }
  if (axes.empty())
    return success();
  FailureOr<Value> summed =
      node.create<ReduceSumOp>(term.value, ArrayRef<int64_t>(axes), false);
  if (failed(summed))
    return failure();
  term.value = *summed;
  term.labels = kept;
  return success();
}

/// Contracts `a` with `b` as one batched matmul; labels in `later` or in the
/// output stay.
static FailureOr<Term> contract(NodeImporter &node, Term &a, Term &b,
                                ArrayRef<Term> later, ArrayRef<Label> output) {
  auto sizeOf = [](const Term &t, Label l) {
    auto it = llvm::find(t.labels, l);
    return typeOf(t.value).getDimSize(it - t.labels.begin());
  };
  SmallVector<Label> batch, summed, aOnly, bOnly;
  for (Label l : a.labels) {
    if (!llvm::is_contained(b.labels, l)) {
      aOnly.push_back(l);
      continue;
    }
    if (sizeOf(a, l) != sizeOf(b, l))
      return node.emitUnsupported("broadcast label sizes")
             << "a label spans dimensions of sizes " << sizeOf(a, l) << " and "
             << sizeOf(b, l) << "; broadcasting a size-1 label dimension is "
             << "not supported";
    if (llvm::is_contained(output, l) || usedBy(l, later))
      batch.push_back(l);
    else
      summed.push_back(l);
  }
  for (Label l : b.labels)
    if (!llvm::is_contained(a.labels, l))
      bOnly.push_back(l);
  auto product = [](const Term &t, ArrayRef<Label> ls) {
    int64_t n = 1;
    for (Label l : ls) {
      auto it = llvm::find(t.labels, l);
      n *= typeOf(t.value).getDimSize(it - t.labels.begin());
    }
    return n;
  };
  int64_t nb = product(a, batch), nm = product(a, aOnly),
          nk = product(a, summed), nn = product(b, bOnly);
  // An operand already laid out [batch, summed, kept] (A) or [batch, kept,
  // summed] (B) is read through the matmul's transpose flag, not copied.
  auto concat = [](ArrayRef<Label> x, ArrayRef<Label> y, ArrayRef<Label> z) {
    SmallVector<Label> v(x);
    v.append(y.begin(), y.end());
    v.append(z.begin(), z.end());
    return v;
  };
  SmallVector<Label> orderA = concat(batch, aOnly, summed);
  SmallVector<Label> orderB = concat(batch, summed, bOnly);
  bool transA = false, transB = false;
  if (a.labels != orderA && a.labels == concat(batch, summed, aOnly)) {
    orderA = a.labels;
    transA = true;
  }
  if (b.labels != orderB && b.labels == concat(batch, bOnly, summed)) {
    orderB = b.labels;
    transB = true;
  }
  FailureOr<Value> ta = transposeTo(node, a, orderA);
  FailureOr<Value> tb = transposeTo(node, b, orderB);
  if (failed(ta) || failed(tb))
    return failure();
  FailureOr<Value> ra = transA ? node.reshape(*ta, {nb, nk, nm})
                               : node.reshape(*ta, {nb, nm, nk});
  FailureOr<Value> rb = transB ? node.reshape(*tb, {nb, nn, nk})
                               : node.reshape(*tb, {nb, nk, nn});
  if (failed(ra) || failed(rb))
    return failure();
  FailureOr<Value> y = node.create<MatmulOp>(*ra, *rb, transA, transB);
  if (failed(y))
    return failure();
  Term result;
  result.labels = batch;
  result.labels.append(aOnly);
  result.labels.append(bOnly);
  SmallVector<int64_t> shape;
  for (Label l : batch)
    shape.push_back(sizeOf(a, l));
  for (Label l : aOnly)
    shape.push_back(sizeOf(a, l));
  for (Label l : bOnly)
    shape.push_back(sizeOf(b, l));
  FailureOr<Value> shaped = node.reshape(*y, shape);
  if (failed(shaped))
    return failure();
  result.value = *shaped;
  return result;
}

LogicalResult mlir::tcc::importEinsum(NodeImporter &node) {
  const onnx::AttributeProto *attr = node.attr("equation");
  if (!attr || !attr->has_s())
    return node.emitError() << "has no 'equation' attribute";
  if (node.numInputs() == 0)
    return node.emitError() << "has no inputs";
  SmallVector<Value> operands;
  for (unsigned i = 0; i < node.numInputs(); ++i) {
    FailureOr<Value> v = node.input(i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  FailureOr<Equation> eq = parseEquation(node, attr->s(), operands);
  if (failed(eq))
    return failure();

  SmallVector<Term> terms;
  for (auto [v, labels] : llvm::zip(operands, eq->inputs))
    terms.push_back({v, labels});
  for (Term &t : terms) {
    for (bool done = false; !done;)
      if (failed(takeDiagonal(node, t, done)))
        return failure();
  }
  for (size_t i = 0; i < terms.size(); ++i) {
    SmallVector<Term> others(terms.begin(), terms.begin() + i);
    others.append(terms.begin() + i + 1, terms.end());
    if (failed(sumUnneeded(node, terms[i], others, eq->output)))
      return failure();
  }
  Term acc = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    ArrayRef<Term> later = ArrayRef<Term>(terms).drop_front(i + 1);
    FailureOr<Term> next = contract(node, acc, terms[i], later, eq->output);
    if (failed(next))
      return failure();
    acc = *next;
  }
  if (acc.labels.size() != eq->output.size())
    return node.emitError() << "equation '" << attr->s()
                            << "' leaves dimensions the output does not name";
  FailureOr<Value> y = transposeTo(node, acc, eq->output);
  if (failed(y))
    return failure();
  node.setOutput(0, *y);
  return success();
}

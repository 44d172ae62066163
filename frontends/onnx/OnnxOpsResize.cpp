//===- OnnxOpsResize.cpp - Builders: Resize, Upsample --------------------===//
//
// Resizing is separable: along each resized axis, output position j is a
// fixed weighted sum of a few input positions, computed here at import
// from the static shapes exactly as ONNX's reference does it (the source
// coordinate from coordinate_transformation_mode, the taps and their
// coefficients from the mode, edge clamping, exclude_outside, antialias,
// tf_crop_and_resize's extrapolation). Each axis then becomes, per tap,
// a tcc.gather of the input along the axis with a constant index vector,
// times a constant coefficient vector, summed; nearest is one gather. The
// gradient is that of gathers and products: the scatter-add of dy with
// the same coefficients, the transpose of the interpolation.
//
// Resize 10 and Upsample (7, 9) have no coordinate or rounding attributes:
// they map output j to input j / scale ("asymmetric"), nearest rounding
// down when enlarging and up when shrinking, as onnxruntime does for them.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxGraph.h"

#include <cmath>
#include <map>
#include <string>

using namespace mlir;
using namespace mlir::tcc;

static RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

namespace {
enum class Mode { Nearest, Linear, Cubic };

struct ResizeSpec {
  Mode mode = Mode::Nearest;
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool antialias = false;
  float extrapolation = 0.0f;
};

/// One output position: the input positions it reads and their weights.
using Taps = std::vector<std::pair<int64_t, double>>;
} // namespace

static std::vector<double> nearestCoeffs(double ratio, StringRef mode) {
  if (ratio == std::floor(ratio))
    return {0, 1};
  if (mode == "round_prefer_floor")
    return {double(ratio <= 0.5), double(ratio > 0.5)};
  if (mode == "round_prefer_ceil")
    return {double(ratio < 0.5), double(ratio >= 0.5)};
  if (mode == "floor")
    return {1, 0};
  return {0, 1}; // ceil
}

static std::vector<double> cubicCoeffs(double r, double a, bool antialias,
                                       double scale) {
  if (!antialias)
    return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
            ((a + 2) * r - (a + 3)) * r * r + 1,
            ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
            ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) *
                    ((1 - r) + 1) -
                4 * a};
  scale = std::min(scale, 1.0);
  auto coeff = [&](double x) {
    x = std::fabs(x);
    if (x <= 1)
      return (a + 2) * x * x * x - (a + 3) * x * x + 1;
    if (x < 2)
      return a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a;
    return 0.0;
  };
  int64_t start = int64_t(std::floor(-2 / scale)) + 1, end = 2 - start;
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = start; i < end; ++i) {
    c.push_back(coeff(scale * (i - r)));
    sum += c.back();
  }
  for (double &v : c)
    v /= sum;
  return c;
}

static std::vector<double> linearCoeffs(double r, bool antialias,
                                        double scale) {
  if (!antialias)
    return {1 - r, r};
  scale = std::min(scale, 1.0);
  int64_t start = int64_t(std::floor(-1 / scale)) + 1;
  int64_t footprint = 2 - 2 * start;
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = start; i < start + footprint; ++i) {
    c.push_back(std::clamp(1 - std::fabs((i - r) * scale), 0.0, 1.0));
    sum += c.back();
  }
  for (double &v : c)
    v /= sum;
  return c;
}

/// The taps of every output position along one axis (ONNX's reference,
/// _interpolate_1d_along_axis), and whether each is extrapolated.
static std::vector<Taps> axisTaps(const ResizeSpec &spec, int64_t in,
                                  int64_t out, double scale, double roiLo,
                                  double roiHi, std::vector<bool> &outside) {
  double outWidth = scale * in;
  std::vector<Taps> taps(out);
  outside.assign(out, false);
  for (int64_t y = 0; y < out; ++y) {
    const std::string &m = spec.coord;
    double x;
    if (m == "align_corners")
      x = outWidth == 1 ? 0.0 : y * double(in - 1) / (outWidth - 1);
    else if (m == "asymmetric")
      x = y / scale;
    else if (m == "tf_crop_and_resize") {
      x = outWidth == 1 ? (roiHi - roiLo) * (in - 1) / 2
                        : y * (roiHi - roiLo) * (in - 1) / (outWidth - 1);
      x += roiLo * (in - 1);
      outside[y] = x < 0 || x > in - 1;
    } else if (m == "pytorch_half_pixel")
      x = outWidth == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    else if (m == "half_pixel_symmetric") {
      double adjustment = out / outWidth, center = in / 2.0;
      x = center * (1 - adjustment) + (y + 0.5) / scale - 0.5;
    } else if (m == "tf_half_pixel_for_nn")
      x = (y + 0.5) / scale;
    else // half_pixel
      x = (y + 0.5) / scale - 0.5;

    double fl = std::floor(x);
    double ratio = x == fl ? 1.0 : x - fl;
    std::vector<double> c;
    switch (spec.mode) {
    case Mode::Nearest:
      c = nearestCoeffs(ratio, spec.nearest);
      break;
    case Mode::Linear:
      c = linearCoeffs(ratio, spec.antialias, scale);
      break;
    case Mode::Cubic:
      c = cubicCoeffs(ratio, spec.cubicA, spec.antialias, scale);
      break;
    }
    int64_t n = c.size(), pad = (n + 1) / 2;
    double xp = x + pad;
    double p = std::floor(xp), frac = xp - p;
    int64_t offset = n % 2 == 0
                         ? (frac == 0 ? -(n / 2) : -(n / 2) + 1)
                         : (frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1);
    int64_t start = int64_t(p) + offset - pad;
    if (spec.excludeOutside) {
      double sum = 0;
      for (int64_t t = 0; t < n; ++t) {
        if (start + t < 0 || start + t >= in)
          c[t] = 0;
        sum += c[t];
      }
      if (sum != 0)
        for (double &v : c)
          v /= sum;
    }
    // Clamped positions merge: the edge repeats.
    std::map<int64_t, double> merged;
    for (int64_t t = 0; t < n; ++t)
      if (c[t] != 0)
        merged[std::clamp<int64_t>(start + t, 0, in - 1)] += c[t];
    for (auto &[i, w] : merged)
      taps[y].push_back({i, w});
  }
  return taps;
}

/// Builds the resize of `x` along `axis` from its taps.
static FailureOr<Value> applyAxis(NodeImporter &node, Value x, int64_t axis,
                                  const std::vector<Taps> &taps,
                                  const std::vector<bool> &outside,
                                  float extrapolation) {
  int64_t out = taps.size(), rank = typeOf(x).getRank();
  size_t k = 0;
  bool oneHot = true;
  for (const Taps &t : taps) {
    k = std::max(k, t.size());
    for (auto &[i, w] : t)
      oneHot &= w == 1.0;
  }
  OpBuilder &b = node.builder();
  auto itype = RankedTensorType::get({out}, b.getI64Type());
  SmallVector<int64_t> wshape(rank, 1);
  wshape[axis] = out;
  auto wtype = RankedTensorType::get(wshape, b.getF32Type());
  Value sum;
  for (size_t t = 0; t < std::max<size_t>(k, 1); ++t) {
    SmallVector<int64_t> idx;
    SmallVector<float> weight;
    for (const Taps &tp : taps) {
      idx.push_back(t < tp.size() ? tp[t].first : 0);
      weight.push_back(t < tp.size() ? float(tp[t].second) : 0.0f);
    }
    Value indices = ConstantOp::create(
        b, node.loc(), DenseElementsAttr::get(itype, ArrayRef<int64_t>(idx)));
    FailureOr<Value> g = node.create<GatherOp>(x, indices, uint64_t(axis));
    if (failed(g))
      return failure();
    Value term = *g;
    if (!oneHot) {
      Value w = ConstantOp::create(
          b, node.loc(),
          DenseElementsAttr::get(wtype, ArrayRef<float>(weight)));
      FailureOr<Value> m = node.create<MulOp>(term, w);
      if (failed(m))
        return failure();
      term = *m;
    }
    if (!sum) {
      sum = term;
      continue;
    }
    FailureOr<Value> a = node.create<AddOp>(sum, term);
    if (failed(a))
      return failure();
    sum = *a;
  }
  if (llvm::is_contained(outside, true)) {
    // where(outside, extrapolation, y) as y * keep + extrapolation * outside.
    SmallVector<float> keep, fill;
    for (bool o : outside) {
      keep.push_back(o ? 0.0f : 1.0f);
      fill.push_back(o ? extrapolation : 0.0f);
    }
    Value kc = ConstantOp::create(
        b, node.loc(), DenseElementsAttr::get(wtype, ArrayRef<float>(keep)));
    Value fc = ConstantOp::create(
        b, node.loc(), DenseElementsAttr::get(wtype, ArrayRef<float>(fill)));
    FailureOr<Value> m = node.create<MulOp>(sum, kc);
    if (failed(m))
      return failure();
    FailureOr<Value> a = node.create<AddOp>(*m, fc);
    if (failed(a))
      return failure();
    sum = *a;
  }
  return sum;
}

/// Float values of a constant input, or failure with an error.
static FailureOr<SmallVector<double>>
constantFloats(NodeImporter &node, unsigned i, StringRef what) {
  DenseElementsAttr c = node.constantInput(i);
  if (!c)
    return node.emitUnsupported(std::string("non-constant ") + what.str())
           << what << " (input " << i
           << ") must be known at import: output shapes are static";
  SmallVector<double> out;
  if (isa<FloatType>(c.getElementType())) {
    for (APFloat v : c.getValues<APFloat>())
      out.push_back(v.convertToDouble());
  } else {
    for (APInt v : c.getValues<APInt>())
      out.push_back(double(v.getSExtValue()));
  }
  return out;
}

static FailureOr<std::string> stringAttr(NodeImporter &node, StringRef name,
                                         StringRef dflt) {
  const onnx::AttributeProto *a = node.attr(name);
  if (!a)
    return dflt.str();
  if (a->type() != onnx::AttributeProto::STRING)
    return node.emitError() << "attribute '" << name << "' should be a string";
  return a->s();
}

/// Resizes `x` by `scales` (one per dimension) to `sizes`.
static LogicalResult resizeWith(NodeImporter &node, Value x,
                                const ResizeSpec &spec, ArrayRef<double> scales,
                                ArrayRef<int64_t> sizes, ArrayRef<double> roi) {
  ArrayRef<int64_t> shape = typeOf(x).getShape();
  int64_t rank = shape.size();
  Value y = x;
  for (int64_t a = 0; a < rank; ++a) {
    double lo = roi.empty() ? 0.0 : roi[a],
           hi = roi.empty() ? 1.0 : roi[a + rank];
    if (std::fabs(scales[a] - 1.0) < 1e-9 && sizes[a] == shape[a] &&
        (roi.empty() || (lo == 0.0 && hi == 1.0)))
      continue;
    if (sizes[a] < 1 || shape[a] < 1)
      return node.emitError() << "dimension " << a << " of " << shape[a]
                              << " entries would be resized to " << sizes[a];
    std::vector<bool> outside;
    std::vector<Taps> taps =
        axisTaps(spec, shape[a], sizes[a], scales[a], lo, hi, outside);
    FailureOr<Value> r =
        applyAxis(node, y, a, taps, outside, spec.extrapolation);
    if (failed(r))
      return failure();
    y = *r;
  }
  node.setOutput(0, y);
  return success();
}

static FailureOr<Mode> parseMode(NodeImporter &node, bool cubicAllowed) {
  FailureOr<std::string> m = stringAttr(node, "mode", "nearest");
  if (failed(m))
    return failure();
  if (*m == "nearest")
    return Mode::Nearest;
  if (*m == "linear" || (*m == "bilinear" && node.opType() == "Upsample"))
    return Mode::Linear;
  if (*m == "cubic" && cubicAllowed)
    return Mode::Cubic;
  return node.emitError() << "attribute 'mode' = '" << *m
                          << "' is not one of nearest, linear"
                          << (cubicAllowed ? ", cubic" : "");
}

/// Resize 10 and Upsample: asymmetric, with onnxruntime's rounding.
static LogicalResult importLegacyResize(NodeImporter &node, Value x,
                                        ArrayRef<double> scales) {
  ArrayRef<int64_t> shape = typeOf(x).getShape();
  if ((int64_t)scales.size() != (int64_t)shape.size())
    return node.emitError()
           << "scales has " << scales.size() << " values for a rank-"
           << shape.size() << " input";
  FailureOr<Mode> mode = parseMode(node, false);
  if (failed(mode))
    return failure();
  SmallVector<int64_t> sizes;
  for (size_t a = 0; a < shape.size(); ++a) {
    if (!(scales[a] > 0))
      return node.emitError() << "scales must be positive";
    sizes.push_back(int64_t(std::floor(shape[a] * scales[a])));
  }
  // Rounding is chosen per axis: down where it enlarges, up where it
  // shrinks.
  Value y = x;
  for (size_t a = 0; a < shape.size(); ++a) {
    if (scales[a] == 1.0)
      continue;
    ResizeSpec spec;
    spec.mode = *mode;
    spec.coord = "asymmetric";
    spec.nearest = scales[a] > 1.0 ? "floor" : "ceil";
    std::vector<bool> outside;
    std::vector<Taps> taps =
        axisTaps(spec, shape[a], sizes[a], scales[a], 0, 1, outside);
    FailureOr<Value> r = applyAxis(node, y, a, taps, outside, 0.0f);
    if (failed(r))
      return failure();
    y = *r;
  }
  node.setOutput(0, y);
  return success();
}

// Upsample 7 (scales attribute), 9 (scales input 1). Deprecated at 10.
LogicalResult mlir::tcc::importUpsample(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  SmallVector<double> scales;
  if (node.opset() < 9) {
    const onnx::AttributeProto *a = node.attr("scales");
    if (!a)
      return node.emitError() << "requires attribute 'scales'";
    for (float f : a->floats())
      scales.push_back(f);
  } else {
    FailureOr<SmallVector<double>> s = constantFloats(node, 1, "scales");
    if (failed(s))
      return failure();
    scales = *s;
  }
  return importLegacyResize(node, *x, scales);
}

// Resize 10 (scales input 1, modes nearest/linear), 11 (roi, scales and
// sizes inputs; coordinate_transformation_mode, nearest_mode, cubic,
// exclude_outside, extrapolation_value), 13 (roi and scales optional), 18
// (antialias, axes, keep_aspect_ratio_policy), 19 (half_pixel_symmetric).
LogicalResult mlir::tcc::importResize(NodeImporter &node) {
  FailureOr<Value> x = node.input(0);
  if (failed(x))
    return failure();
  if (node.opset() < 11) {
    FailureOr<SmallVector<double>> s = constantFloats(node, 1, "scales");
    if (failed(s))
      return failure();
    return importLegacyResize(node, *x, *s);
  }
  ArrayRef<int64_t> shape = typeOf(*x).getShape();
  int64_t rank = shape.size();
  ResizeSpec spec;
  FailureOr<Mode> mode = parseMode(node, true);
  FailureOr<std::string> coord =
      stringAttr(node, "coordinate_transformation_mode", "half_pixel");
  FailureOr<std::string> nearest =
      stringAttr(node, "nearest_mode", "round_prefer_floor");
  FailureOr<std::string> policy =
      stringAttr(node, "keep_aspect_ratio_policy", "stretch");
  FailureOr<float> a = node.floatAttr("cubic_coeff_a", -0.75f);
  FailureOr<int64_t> exclude = node.intAttr("exclude_outside", 0);
  FailureOr<int64_t> antialias = node.intAttr("antialias", 0);
  FailureOr<float> extrapolation = node.floatAttr("extrapolation_value", 0.0f);
  FailureOr<std::optional<SmallVector<int64_t>>> axesAttr =
      node.intsAttr("axes");
  if (failed(mode) || failed(coord) || failed(nearest) || failed(policy) ||
      failed(a) || failed(exclude) || failed(antialias) ||
      failed(extrapolation) || failed(axesAttr))
    return failure();
  static const char *kCoords[] = {"half_pixel",           "pytorch_half_pixel",
                                  "align_corners",        "asymmetric",
                                  "tf_half_pixel_for_nn", "tf_crop_and_resize",
                                  "half_pixel_symmetric"};
  if (!llvm::is_contained(kCoords, *coord) ||
      (*coord == "half_pixel_symmetric" && node.opset() < 19))
    return node.emitError()
           << "attribute 'coordinate_transformation_mode' = '" << *coord
           << "' is not known at opset " << node.opset();
  if (*nearest != "round_prefer_floor" && *nearest != "round_prefer_ceil" &&
      *nearest != "floor" && *nearest != "ceil")
    return node.emitError() << "attribute 'nearest_mode' = '" << *nearest
                            << "' is not one of round_prefer_floor, "
                               "round_prefer_ceil, floor, ceil";
  if (*antialias && *mode == Mode::Nearest)
    return node.emitError() << "antialias applies to linear and cubic modes";
  spec.mode = *mode;
  spec.coord = *coord;
  spec.nearest = *nearest;
  spec.cubicA = *a;
  spec.excludeOutside = *exclude != 0;
  spec.antialias = *antialias != 0;
  spec.extrapolation = *extrapolation;

  // The resized axes (18: `axes`), then scales or sizes for them.
  SmallVector<int64_t> axes;
  if (*axesAttr) {
    for (int64_t ax : **axesAttr) {
      FailureOr<int64_t> n = node.normalizeAxis("axes entry", ax, rank);
      if (failed(n))
        return failure();
      axes.push_back(*n);
    }
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  int64_t na = axes.size();
  SmallVector<double> roi;
  if (*coord == "tf_crop_and_resize") {
    if (!node.hasInput(1))
      return node.emitError() << "tf_crop_and_resize needs input 'roi'";
    FailureOr<SmallVector<double>> r = constantFloats(node, 1, "roi");
    if (failed(r))
      return failure();
    if ((int64_t)r->size() != 2 * na)
      return node.emitError()
             << "roi has " << r->size() << " values, expected " << 2 * na;
    roi.assign(2 * rank, 0.0);
    for (int64_t d = 0; d < rank; ++d)
      roi[d + rank] = 1.0;
    for (int64_t i = 0; i < na; ++i) {
      roi[axes[i]] = (*r)[i];
      roi[axes[i] + rank] = (*r)[i + na];
    }
  }
  SmallVector<double> scales(rank, 1.0);
  SmallVector<int64_t> sizes(shape);
  bool haveScales = false;
  if (node.hasInput(2)) {
    FailureOr<SmallVector<double>> s = constantFloats(node, 2, "scales");
    if (failed(s))
      return failure();
    haveScales = !s->empty();
    if (haveScales) {
      if ((int64_t)s->size() != na)
        return node.emitError()
               << "scales has " << s->size() << " values, expected " << na;
      for (int64_t i = 0; i < na; ++i) {
        if (!((*s)[i] > 0))
          return node.emitError() << "scales must be positive";
        scales[axes[i]] = (*s)[i];
        sizes[axes[i]] = int64_t(shape[axes[i]] * (*s)[i]);
      }
    }
  }
  if (node.hasInput(3)) {
    if (haveScales)
      return node.emitError() << "scales and sizes exclude each other";
    FailureOr<SmallVector<int64_t>> s = node.constantInts(3, "sizes");
    if (failed(s))
      return failure();
    if ((int64_t)s->size() != na)
      return node.emitError()
             << "sizes has " << s->size() << " values, expected " << na;
    for (int64_t i = 0; i < na; ++i)
      sizes[axes[i]] = (*s)[i];
    for (int64_t d = 0; d < rank; ++d)
      scales[d] = double(sizes[d]) / shape[d];
    if (*policy != "stretch") {
      if (*policy != "not_larger" && *policy != "not_smaller")
        return node.emitError()
               << "attribute 'keep_aspect_ratio_policy' = '" << *policy
               << "' is not one of stretch, "
                  "not_larger, not_smaller";
      double sc = scales[axes[0]];
      for (int64_t ax : axes)
        sc = *policy == "not_larger" ? std::min(sc, scales[ax])
                                     : std::max(sc, scales[ax]);
      for (int64_t ax : axes) {
        scales[ax] = sc;
        sizes[ax] = int64_t(sc * shape[ax] + 0.5);
      }
    }
  } else if (!haveScales) {
    return node.emitError() << "needs one of scales and sizes";
  }
  return resizeWith(node, *x, spec, scales, sizes, roi);
}

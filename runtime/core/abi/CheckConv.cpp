//===- CheckConv.cpp - Convolution, pooling, batch norm -------------------===//
#include "runtime/core/abi/KernelCheck.h"
#include "runtime/core/abi/WindowGeometry.h"

#include <climits>

namespace tcc::rt::abi {

//===----------------------------------------------------------------------===//
// Window geometry shared by convolution and pooling
//===----------------------------------------------------------------------===//

/// Strides, pads and dilations in range: the bounds keep every product of
/// the geometry far from overflow.
static void checkWindowRanges(const Window2d &w) {
  const int64_t big = int64_t(1) << 24;
  auto inRange = [&](int64_t v, int64_t lo) { return v >= lo && v <= big; };
  if (!inRange(w.sh, 1) || !inRange(w.sw, 1) || !inRange(w.dh, 1) ||
      !inRange(w.dw, 1))
    throw Error("strides and dilations must be in [1, 2^24], got " +
                formatShape({w.sh, w.sw}) + " and " +
                formatShape({w.dh, w.dw}));
  if (!inRange(w.pt, 0) || !inRange(w.pl, 0) || !inRange(w.pb, 0) ||
      !inRange(w.pr, 0))
    throw Error("pads must be in [0, 2^24], got " +
                formatShape({w.pt, w.pl, w.pb, w.pr}));
}

/// Checks that `x` is [N, C, H, W] and `y` is [N, channels, OH, OW] for `w`;
/// `xIsInput`/`yIsInput` say where each operand is, `xi`/`yi` its index.
static void expectWindowShapes(const KernelSig &s, const Window2d &w,
                               bool xIsInput, size_t xi, bool yIsInput,
                               size_t yi, int64_t channels) {
  const TensorInfo &x = xIsInput ? *s.in[xi] : *s.out[xi];
  const TensorInfo &y = yIsInput ? *s.in[yi] : *s.out[yi];
  if (x.shape.size() != 4)
    throw Error(operandName(s, xIsInput, xi) + " has shape " +
                formatShape(x.shape) + "; expected [N, C, H, W]");
  if (w.kh < 1 || w.kw < 1 || w.kh > (1 << 24) || w.kw > (1 << 24))
    throw Error("kernel size " + formatShape({w.kh, w.kw}) +
                " is out of range");
  int64_t oh = windowOut(x.shape[2], w.kh, w.sh, w.pt, w.pb, w.dh, w.ceil);
  int64_t ow = windowOut(x.shape[3], w.kw, w.sw, w.pl, w.pr, w.dw, w.ceil);
  if (oh < 1 || ow < 1)
    throw Error("the window " + formatShape({w.kh, w.kw}) + " does not fit " +
                operandName(s, xIsInput, xi) + " " + formatShape(x.shape));
  std::vector<int64_t> expected = {x.shape[0], channels, oh, ow};
  if (y.shape != expected)
    throw Error(operandName(s, yIsInput, yi) + " has shape " +
                formatShape(y.shape) + ", expected " + formatShape(expected));
}

//===----------------------------------------------------------------------===//
// Convolution (Conv2dAttrs)
//===----------------------------------------------------------------------===//

/// Checks a convolution whose input, weight and output are the given
/// operands (by side and index).
static void checkConv(const KernelSig &s, bool xIn, size_t xi, bool wIn,
                      size_t wi, bool yIn, size_t yi) {
  expectAllF32(s);
  // conv2d and its two gradients share Conv2dAttrs.
  Conv2dAttrs a = attrsOf<Conv2dAttrs>(s.instr);
  Window2d w = convWindow(a, 1, 1);
  checkWindowRanges(w);
  int64_t groups = a.groups;
  const TensorInfo &x = xIn ? *s.in[xi] : *s.out[xi];
  const TensorInfo &wt = wIn ? *s.in[wi] : *s.out[wi];
  if (wt.shape.size() != 4)
    throw Error(operandName(s, wIn, wi) + " has shape " +
                formatShape(wt.shape) + "; expected [O, C / groups, kH, kW]");
  if (x.shape.size() != 4)
    throw Error(operandName(s, xIn, xi) + " has shape " + formatShape(x.shape) +
                "; expected [N, C, H, W]");
  if (groups < 1 || x.shape[1] % groups || wt.shape[0] % groups ||
      wt.shape[1] * groups != x.shape[1])
    throw Error("groups = " + std::to_string(groups) + " does not fit " +
                operandName(s, xIn, xi) + " " + formatShape(x.shape) + " and " +
                operandName(s, wIn, wi) + " " + formatShape(wt.shape));
  w.kh = wt.shape[2];
  w.kw = wt.shape[3];
  expectWindowShapes(s, w, xIn, xi, yIn, yi, wt.shape[0]);
  const TensorInfo &y = yIn ? *s.in[yi] : *s.out[yi];
  ConvGeom g = convGeom(x.shape, wt.shape, y.shape, a);
  // OpenBLAS takes 32-bit sizes.
  for (int64_t d : {g.k, g.np(), g.og})
    if (d > INT_MAX)
      throw Error("convolution dimension " + std::to_string(d) +
                  " is too large for BLAS");
}

// conv2d: in [x, w] or [x, w, bias], out [y]
void check_conv2d(const KernelSig &s) {
  if (s.in.size() != 2 && s.in.size() != 3)
    throw Error("expects 2 or 3 inputs (x, w[, bias]), got " +
                std::to_string(s.in.size()));
  expectArity(s, s.in.size(), 1);
  checkConv(s, true, 0, true, 1, false, 0);
  if (s.in.size() == 3)
    expectNumel(s, true, 2, s.in[1]->shape[0]);
}

// conv2d_grad_input: in [dy, w], out [dx]
void check_conv2d_grad_input(const KernelSig &s) {
  expectArity(s, 2, 1);
  checkConv(s, false, 0, true, 1, true, 0);
}

// conv2d_grad_weight: in [dy, x], out [dw]
void check_conv2d_grad_weight(const KernelSig &s) {
  expectArity(s, 2, 1);
  checkConv(s, true, 1, false, 0, true, 0);
}

//===----------------------------------------------------------------------===//
// Pooling (MaxPool2dAttrs, AvgPool2dAttrs)
//===----------------------------------------------------------------------===//

/// The pooling window, checked (ceil_mode and count_include_pad are flags
/// checkAttrs checked); an average takes dilations 1.
static Window2d checkedPoolWindow(const KernelSig &s, bool avg) {
  if (!avg) {
    Window2d w = poolWindow(attrsOf<MaxPool2dAttrs>(s.instr));
    checkWindowRanges(w);
    return w;
  }
  AvgPool2dAttrs a = attrsOf<AvgPool2dAttrs>(s.instr);
  Window2d w = poolWindow(a);
  checkWindowRanges(w);
  if (w.dh != 1 || w.dw != 1)
    throw Error("average pooling takes dilations [1,1] and count_include_pad "
                "0 or 1, got " +
                formatShape({w.dh, w.dw}) + " and " +
                std::to_string(a.countIncludePad ? 1 : 0));
  return w;
}

// max_pool2d: in [x], out [y, indices (i64)]
void check_max_pool2d(const KernelSig &s) {
  expectArity(s, 1, 2);
  Window2d w = checkedPoolWindow(s, false);
  if (s.in[0]->dtype != DType::F32 || s.out[0]->dtype != DType::F32)
    throw Error("input and output 0 must be f32");
  if (s.out[1]->dtype != DType::I64)
    throw Error(operandName(s, false, 1) + " (the indices) must be i64");
  expectWindowShapes(s, w, true, 0, false, 0,
                     s.in[0]->shape.size() == 4 ? s.in[0]->shape[1] : 0);
  if (s.out[1]->shape != s.out[0]->shape)
    throw Error(operandName(s, false, 1) + " has shape " +
                formatShape(s.out[1]->shape) + ", expected " +
                formatShape(s.out[0]->shape));
}

// max_pool2d_grad: in [dy, indices], out [dx]; no attributes (the indices
// say where each gradient goes).
void check_max_pool2d_grad(const KernelSig &s) {
  expectArity(s, 2, 1);
  if (s.in[0]->dtype != DType::F32 || s.out[0]->dtype != DType::F32)
    throw Error("input 0 and the output must be f32");
  if (s.in[1]->dtype != DType::I64)
    throw Error(operandName(s, true, 1) + " (the indices) must be i64");
  const auto &dy = s.in[0]->shape, &dx = s.out[0]->shape;
  if (s.in[1]->shape != dy)
    throw Error(operandName(s, true, 1) + " has shape " +
                formatShape(s.in[1]->shape) + ", expected " + formatShape(dy));
  if (dy.size() != 4 || dx.size() != 4 || dy[0] != dx[0] || dy[1] != dx[1])
    throw Error("grad " + formatShape(dy) + " and output " + formatShape(dx) +
                " must be [N, C, ...] with the same N and C");
}

// avg_pool2d: in [x], out [y]
void check_avg_pool2d(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectAllF32(s);
  Window2d w = checkedPoolWindow(s, true);
  expectWindowShapes(s, w, true, 0, false, 0,
                     s.in[0]->shape.size() == 4 ? s.in[0]->shape[1] : 0);
}

// avg_pool2d_grad: in [dy], out [dx]
void check_avg_pool2d_grad(const KernelSig &s) {
  expectArity(s, 1, 1);
  expectAllF32(s);
  Window2d w = checkedPoolWindow(s, true);
  expectWindowShapes(s, w, false, 0, true, 0,
                     s.out[0]->shape.size() == 4 ? s.out[0]->shape[1] : 0);
}

//===----------------------------------------------------------------------===//
// Batch normalization (EpsAttrs)
//===----------------------------------------------------------------------===//

/// Checks x at in[xi] is [N, C, ...] (f32, all operands f32), that `same`
/// operands have x's shape and `perChannel` ones C elements, and eps.
static void checkBatchNorm(const KernelSig &s, size_t xi,
                           std::vector<std::pair<bool, size_t>> same,
                           std::vector<std::pair<bool, size_t>> perChannel) {
  expectAllF32(s);
  const TensorInfo &x = *s.in[xi];
  if (x.shape.size() < 2)
    throw Error(operandName(s, true, xi) + " has shape " +
                formatShape(x.shape) + "; expected [N, C, ...]");
  // batch_norm_train and its gradient share EpsAttrs.
  double eps = attrsOf<EpsAttrs>(s.instr).eps;
  if (!(eps >= 0))
    throw Error("epsilon must be non-negative, got " + std::to_string(eps));
  for (auto [isIn, i] : same) {
    const TensorInfo &t = isIn ? *s.in[i] : *s.out[i];
    if (t.shape != x.shape)
      throw Error(operandName(s, isIn, i) + " has shape " +
                  formatShape(t.shape) + ", expected " + formatShape(x.shape));
  }
  for (auto [isIn, i] : perChannel)
    expectNumel(s, isIn, i, x.shape[1]);
}

// in [x, scale, bias] out [y, mean, var]
void check_batch_norm_train(const KernelSig &s) {
  expectArity(s, 3, 3);
  checkBatchNorm(s, 0, {{false, 0}},
                 {{true, 1}, {true, 2}, {false, 1}, {false, 2}});
}

// in [dy, x, scale, mean, var] out [dx, dscale, dbias]
void check_batch_norm_train_grad(const KernelSig &s) {
  expectArity(s, 5, 3);
  checkBatchNorm(s, 1, {{true, 0}, {false, 0}},
                 {{true, 2}, {true, 3}, {true, 4}, {false, 1}, {false, 2}});
}

} // namespace tcc::rt::abi

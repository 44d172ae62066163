//===- KernelCasesConv.h - Convolution, pooling and batch norm cases ------===//
//
// The image kernels (NCHW, f32; runtime/core/abi/Kernels.h): conv2d and
// both of its gradients, max and average pooling with their gradients, and
// training batch norm with its gradient, over the geometries that
// KernelsConvTest.cpp checks against the definitions. CUDA has no kernels
// for these yet: on a GPU the conformance runner expects its session to
// refuse them, and the emulator skips them.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_KERNELCASESCONV_H
#define TCC_TESTS_UNIT_KERNELCASESCONV_H

#include "KernelCases.h"

#include "runtime/core/abi/WindowGeometry.h"

namespace tcc::rt::test {

/// A convolution or pooling geometry: input [n, c, h, w], o output
/// channels (convolution), window, strides, pads [top, left, bottom,
/// right] and dilations.
struct WindowCaseGeom {
  int64_t n, c, h, w, o;
  int64_t kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  int64_t groups = 1;
  bool ceil = false;

  int64_t oh() const { return abi::windowOut(h, kh, sh, pt, pb, dh, ceil); }
  int64_t ow() const { return abi::windowOut(w, kw, sw, pl, pr, dw, ceil); }
  std::vector<int64_t> x() const { return {n, c, h, w}; }
  std::vector<int64_t> y(int64_t channels) const {
    return {n, channels, oh(), ow()};
  }
  std::vector<int64_t> convAttrs() const {
    return {sh, sw, pt, pl, pb, pr, dh, dw, groups};
  }
  std::vector<int64_t> poolAttrs() const {
    return {kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, ceil ? 1 : 0};
  }
};

/// conv2d with and without a bias, conv2d_grad_input and
/// conv2d_grad_weight: a same-size 3x3, odd sizes with asymmetric pads,
/// groups and a dilation, a strided 7x7 stem, depthwise, a strided 1x1 and
/// pads larger than the window. Sums of up to 147 products in another
/// order on another backend: f32's GEMM tolerance.
inline void convCases(std::vector<KernelCase> &cases) {
  KernelCase c{"conv2d"};
  c.rtol = c.atol = 1e-4;
  OneProgram &p = c.prog;
  const std::vector<WindowCaseGeom> geoms = {
      // n  c  h  w  o  kh kw sh sw pt pl pb pr dh dw groups
      {2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, // 3x3 same
      {2, 4, 7, 6, 6, 3, 2, 2, 1, 1, 0, 2, 1, 1, 2, 2}, // all odd
      {3, 3, 9, 9, 5, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1}, // resnet stem
      {2, 6, 5, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6}, // depthwise
      {4, 8, 2, 2, 4, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1}, // 1x1 down
      {1, 2, 4, 5, 3, 2, 2, 3, 3, 2, 2, 2, 2, 2, 1, 1}, // pads > k
  };
  for (const WindowCaseGeom &g : geoms) {
    std::vector<int64_t> ws{g.o, g.c / g.groups, g.kh, g.kw};
    int32_t x = p.random(DType::F32, g.x()), w = p.random(DType::F32, ws);
    int32_t b = p.random(DType::F32, {g.o});
    int32_t dy = p.random(DType::F32, g.y(g.o));
    std::vector<int32_t> outs{p.out(DType::F32, g.y(g.o)),
                              p.out(DType::F32, g.y(g.o)),
                              p.out(DType::F32, g.x()), p.out(DType::F32, ws)};
    p.instr("conv2d", {x, w, b}, {outs[0]}, g.convAttrs());
    p.instr("conv2d", {x, w}, {outs[1]}, g.convAttrs());
    p.instr("conv2d_grad_input", {dy, w}, {outs[2]}, g.convAttrs());
    p.instr("conv2d_grad_weight", {dy, x}, {outs[3]}, g.convAttrs());
    c.outs.insert(c.outs.end(), outs.begin(), outs.end());
  }
  cases.push_back(std::move(c));
}

/// max_pool2d (values and indices bit for bit) and its gradient through
/// the indices, and avg_pool2d with and without the pads counted, and its
/// gradient: ResNet's 3x3 stride 2, ceil mode with and without pads,
/// a dilated max (averages take no dilation) and one window a plane. In
/// the first geometry the indices are an intermediate (a temporary the
/// program does not keep), so an eager session allocates and frees it.
inline void poolCases(std::vector<KernelCase> &cases) {
  KernelCase c{"pooling"};
  OneProgram &p = c.prog;
  const std::vector<WindowCaseGeom> geoms = {
      // n  c  h  w  o  kh kw sh sw pt pl pb pr dh dw groups ceil
      {2, 3, 8, 8, 0, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, false}, // resnet
      {1, 2, 7, 6, 0, 2, 3, 2, 2, 0, 1, 1, 0, 1, 1, 1, true},  // ceil
      {2, 2, 5, 5, 0, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, true},  // ceil + pad
      {1, 3, 9, 7, 0, 2, 2, 1, 2, 0, 0, 1, 1, 2, 2, 1, false}, // dilated
      {2, 1, 4, 4, 0, 4, 4, 4, 4, 0, 0, 0, 0, 1, 1, 1, false}, // global
  };
  for (size_t i = 0; i < geoms.size(); ++i) {
    const WindowCaseGeom &g = geoms[i];
    int32_t x = p.random(DType::F32, g.x());
    int32_t dy = p.random(DType::F32, g.y(g.c));
    int32_t y = p.out(DType::F32, g.y(g.c));
    int32_t idx =
        i == 0 ? p.temp(DType::I64, g.y(g.c)) : p.out(DType::I64, g.y(g.c));
    p.instr("max_pool2d", {x}, {y, idx}, g.poolAttrs());
    int32_t dx = p.out(DType::F32, g.x());
    p.instr("max_pool2d_grad", {dy, idx}, {dx});
    c.outs.insert(c.outs.end(), {y, dx});
    if (i == 0)
      p.internal(idx);
    else
      c.outs.push_back(idx);
    if (g.dh != 1 || g.dw != 1)
      continue;
    for (int64_t includePad : {0, 1}) {
      std::vector<int64_t> attrs = g.poolAttrs();
      attrs.push_back(includePad);
      int32_t ya = p.out(DType::F32, g.y(g.c)), dxa = p.out(DType::F32, g.x());
      p.instr("avg_pool2d", {x}, {ya}, attrs);
      p.instr("avg_pool2d_grad", {dy}, {dxa}, attrs);
      c.outs.insert(c.outs.end(), {ya, dxa});
    }
  }
  cases.push_back(std::move(c));
}

/// batch_norm_train and its gradient over [N, C, H, W], [N, C] and
/// [N, C, L], with inputs around 10 (a variance that must not cancel);
/// [2, 2, 50, 50] has channels of 5000 elements, which the CUDA kernels
/// sum in three slices, the last one shorter.
/// In the last shape the mean and variance are intermediates between the
/// two, as in a training step. Per-channel sums in another order on
/// another backend: f32's GEMM tolerance.
inline void batchNormCases(std::vector<KernelCase> &cases) {
  KernelCase c{"batch_norm"};
  c.rtol = c.atol = 1e-4;
  OneProgram &p = c.prog;
  const double eps = 1e-5;
  const std::vector<std::vector<int64_t>> shapes = {
      {4, 3, 5, 2}, {6, 5}, {2, 2, 50, 50}, {2, 4, 3}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::vector<int64_t> &xs = shapes[i];
    int64_t ch = xs[1];
    bool temps = i + 1 == shapes.size();
    int32_t x = p.random(DType::F32, xs, 9.0f, 11.0f);
    int32_t scale = p.random(DType::F32, {ch}, 0.5f, 1.5f);
    int32_t bias = p.random(DType::F32, {ch});
    int32_t dy = p.random(DType::F32, xs);
    int32_t y = p.out(DType::F32, xs);
    int32_t mean = temps ? p.temp(DType::F32, {ch}) : p.out(DType::F32, {ch});
    int32_t var = temps ? p.temp(DType::F32, {ch}) : p.out(DType::F32, {ch});
    p.instr("batch_norm_train", {x, scale, bias}, {y, mean, var}, {}, {eps});
    std::vector<int32_t> grads{p.out(DType::F32, xs), p.out(DType::F32, {ch}),
                               p.out(DType::F32, {ch})};
    p.instr("batch_norm_train_grad", {dy, x, scale, mean, var}, grads, {},
            {eps});
    c.outs.push_back(y);
    c.outs.insert(c.outs.end(), grads.begin(), grads.end());
    if (temps) {
      p.internal(mean);
      p.internal(var);
    } else {
      c.outs.insert(c.outs.end(), {mean, var});
    }
  }
  cases.push_back(std::move(c));
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELCASESCONV_H

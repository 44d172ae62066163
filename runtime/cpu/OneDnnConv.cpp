//===- OneDnnConv.cpp - 2-D convolution and its gradients on oneDNN -------===//
//
// conv2d, conv2d_grad_input and conv2d_grad_weight as oneDNN's direct
// convolution primitives. The kernels keep NCHW (and OIHW weights) at the
// ABI; each primitive is built with its layouts left to oneDNN, which picks
// channel-blocked ones (nChw16c, OIhw16i16o) on AVX-512 and AVX2: its kernels
// for the plain layouts are GEMM-based and several times slower on ResNet's
// shapes, while the reorders into and out of the blocked ones cost a few
// percent (benchmarks/results/onednn_cpu_2026-11-28.md). Groups map to
// oneDNN's goihw weights, dilations to its dilation - 1.
//
// Whatever oneDNN does not take (empty tensors, a primitive it cannot build)
// runs on the im2col loops of KernelsConv.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/abi/KernelAbi.h"
#include "runtime/core/abi/WindowGeometry.h"
#include "runtime/cpu/OneDnn.h"

namespace tcc::rt::onednn {

using abi::ConvGeom;
using dnnl::algorithm;
using dnnl::prop_kind;

namespace {

/// The descriptors of one convolution problem, in the ABI's layouts
/// (`plain*`) and left to the primitive (`any*`).
struct ConvDescs {
  memory::desc plainX, plainW, plainY, anyX, anyW, anyY, bias;
  memory::dims strides, dilations, padL, padR;
};

ConvDescs convDescs(const ConvGeom &g, bool withBias) {
  ConvDescs d;
  memory::dims x{g.n, g.c, g.h, g.wd}, y{g.n, g.o, g.oh, g.ow};
  memory::dims w = g.groups == 1
                       ? memory::dims{g.o, g.cg, g.w.kh, g.w.kw}
                       : memory::dims{g.groups, g.og, g.cg, g.w.kh, g.w.kw};
  d.plainX = f32(x, Tag::nchw);
  d.plainY = f32(y, Tag::nchw);
  d.plainW = f32(w, g.groups == 1 ? Tag::oihw : Tag::goihw);
  d.anyX = f32(x, Tag::any);
  d.anyY = f32(y, Tag::any);
  d.anyW = f32(w, Tag::any);
  if (withBias)
    d.bias = f32({g.o}, Tag::x);
  d.strides = {g.w.sh, g.w.sw};
  d.dilations = {g.w.dh - 1, g.w.dw - 1};
  d.padL = {g.w.pt, g.w.pl};
  d.padR = {g.w.pb, g.w.pr};
  return d;
}

dnnl::convolution_forward::primitive_desc forwardPd(const ConvDescs &d) {
  dnnl::convolution_forward::desc desc(
      prop_kind::forward_training, algorithm::convolution_direct, d.anyX,
      d.anyW, d.bias, d.anyY, d.strides, d.dilations, d.padL, d.padR);
  return {desc, userScratchpad(), engine()};
}

/// The problem key: the kernel, its shapes and its attributes.
PrimitiveCache<int>::Key convKey(abi::KernelId id, const ConvGeom &g,
                                 bool withBias) {
  return {static_cast<int64_t>(id),
          g.n,
          g.c,
          g.h,
          g.wd,
          g.o,
          g.oh,
          g.ow,
          g.w.kh,
          g.w.kw,
          g.w.sh,
          g.w.sw,
          g.w.pt,
          g.w.pl,
          g.w.pb,
          g.w.pr,
          g.w.dh,
          g.w.dw,
          g.groups,
          withBias ? 1 : 0};
}

/// oneDNN takes the problem: nothing is empty (the loops define the empty
/// cases: zeros, or only the bias).
bool oneDnnTakes(const ConvGeom &g) {
  return g.n > 0 && g.c > 0 && g.o > 0 && g.p > 0 && g.h > 0 && g.wd > 0;
}

struct Forward {
  dnnl::convolution_forward prim;
  Relayout x, w, y; // x, w: plain -> blocked; y: blocked -> plain
  memory::desc bias, scratchpad;
};

struct BackwardData {
  dnnl::convolution_backward_data prim;
  Relayout dy, w, dx;
  memory::desc scratchpad;
};

struct BackwardWeights {
  dnnl::convolution_backward_weights prim;
  Relayout dy, x, dw;
  memory::desc scratchpad;
};

} // namespace

bool conv2d(const KernelArgs &a) {
  const TensorView &X = a.in[0], &W = a.in[1], &Y = a.out[0];
  ConvGeom g = abi::convGeom(*X.shape, *W.shape, *Y.shape,
                             abi::attrs<abi::KernelId::Conv2d>(a.instr));
  bool withBias = a.in.size() == 3;
  static PrimitiveCache<Forward> cache;
  const Forward *e =
      oneDnnTakes(g)
          ? cache.get(convKey(abi::KernelId::Conv2d, g, withBias),
                      [&] {
                        ConvDescs d = convDescs(g, withBias);
                        auto pd = forwardPd(d);
                        return std::make_unique<Forward>(
                            Forward{dnnl::convolution_forward(pd),
                                    Relayout::make(d.plainX, pd.src_desc()),
                                    Relayout::make(d.plainW, pd.weights_desc()),
                                    Relayout::make(pd.dst_desc(), d.plainY),
                                    d.bias, pd.scratchpad_desc()});
                      })
          : nullptr;
  if (!e)
    return false;
  Exec ex;
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, ex.in(e->x, X.data, 0)},
      {DNNL_ARG_WEIGHTS, ex.in(e->w, W.data, 1)},
      {DNNL_ARG_DST, ex.out(e->y, Y.data, 2)}};
  if (withBias)
    args.emplace(DNNL_ARG_BIAS, memory(e->bias, engine(), a.in[2].data));
  ex.run(e->prim, std::move(args), e->scratchpad);
  return true;
}

bool conv2dGradInput(const KernelArgs &a) {
  const TensorView &DY = a.in[0], &W = a.in[1], &DX = a.out[0];
  ConvGeom g =
      abi::convGeom(*DX.shape, *W.shape, *DY.shape,
                    abi::attrs<abi::KernelId::Conv2dGradInput>(a.instr));
  static PrimitiveCache<BackwardData> cache;
  const BackwardData *e =
      oneDnnTakes(g)
          ? cache.get(convKey(abi::KernelId::Conv2dGradInput, g, false),
                      [&] {
                        ConvDescs d = convDescs(g, false);
                        dnnl::convolution_backward_data::desc desc(
                            algorithm::convolution_direct, d.anyX, d.anyW,
                            d.anyY, d.strides, d.dilations, d.padL, d.padR);
                        dnnl::convolution_backward_data::primitive_desc pd(
                            desc, userScratchpad(), engine(), forwardPd(d));
                        return std::make_unique<BackwardData>(BackwardData{
                            dnnl::convolution_backward_data(pd),
                            Relayout::make(d.plainY, pd.diff_dst_desc()),
                            Relayout::make(d.plainW, pd.weights_desc()),
                            Relayout::make(pd.diff_src_desc(), d.plainX),
                            pd.scratchpad_desc()});
                      })
          : nullptr;
  if (!e)
    return false;
  Exec ex;
  ex.run(e->prim,
         {{DNNL_ARG_DIFF_DST, ex.in(e->dy, DY.data, 0)},
          {DNNL_ARG_WEIGHTS, ex.in(e->w, W.data, 1)},
          {DNNL_ARG_DIFF_SRC, ex.out(e->dx, DX.data, 2)}},
         e->scratchpad);
  return true;
}

bool conv2dGradWeight(const KernelArgs &a) {
  const TensorView &DY = a.in[0], &X = a.in[1], &DW = a.out[0];
  ConvGeom g =
      abi::convGeom(*X.shape, *DW.shape, *DY.shape,
                    abi::attrs<abi::KernelId::Conv2dGradWeight>(a.instr));
  // Slot 1 holds weight-sized copies in all three kernels (here the weight
  // gradient), slots 0 and 2 activation-sized ones: the per-thread scratch
  // is one largest weight plus two largest activations, not two weights.
  static PrimitiveCache<BackwardWeights> cache;
  const BackwardWeights *e =
      oneDnnTakes(g)
          ? cache.get(
                convKey(abi::KernelId::Conv2dGradWeight, g, false),
                [&] {
                  ConvDescs d = convDescs(g, false);
                  dnnl::convolution_backward_weights::desc desc(
                      algorithm::convolution_direct, d.anyX, d.anyW, d.anyY,
                      d.strides, d.dilations, d.padL, d.padR);
                  dnnl::convolution_backward_weights::primitive_desc pd(
                      desc, userScratchpad(), engine(), forwardPd(d));
                  return std::make_unique<BackwardWeights>(BackwardWeights{
                      dnnl::convolution_backward_weights(pd),
                      Relayout::make(d.plainY, pd.diff_dst_desc()),
                      Relayout::make(d.plainX, pd.src_desc()),
                      Relayout::make(pd.diff_weights_desc(), d.plainW),
                      pd.scratchpad_desc()});
                })
          : nullptr;
  if (!e)
    return false;
  Exec ex;
  ex.run(e->prim,
         {{DNNL_ARG_DIFF_DST, ex.in(e->dy, DY.data, 0)},
          {DNNL_ARG_SRC, ex.in(e->x, X.data, 2)},
          {DNNL_ARG_DIFF_WEIGHTS, ex.out(e->dw, DW.data, 1)}},
         e->scratchpad);
  return true;
}

} // namespace tcc::rt::onednn

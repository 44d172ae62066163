//===- CudnnConvPlan.cpp - What cuDNN is told about a convolution ---------===//
#include "runtime/cuda/CudnnConvPlan.h"

#include "runtime/core/Artifact.h"
#include "runtime/core/abi/WindowGeometry.h"

#include <algorithm>
#include <climits>
#include <string>

namespace tcc::rt::cuda {

int64_t CudnnConvShape::paddedBytes() const {
  return padded ? int64_t(n) * c * h * w * 4 : 0;
}

int64_t cudnnOutDim(int64_t in, int64_t pad, int64_t k, int64_t s, int64_t d) {
  int64_t span = in + 2 * pad - d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

static int64_t product(const std::vector<int64_t> &v) {
  int64_t p = 1;
  for (int64_t d : v)
    p *= d;
  return p;
}

CudnnConvShape cudnnConvShape(ConvPass pass, const std::vector<int64_t> &x,
                              const std::vector<int64_t> &wt,
                              const std::vector<int64_t> &y,
                              const abi::Conv2dAttrs &a, bool bias) {
  abi::ConvGeom g = abi::convGeom(x, wt, y, a);
  CudnnConvShape s;
  s.pass = pass;
  s.bias = bias;
  int64_t padH = std::min(g.w.pt, g.w.pb), padW = std::min(g.w.pl, g.w.pr);
  s.extraTop = g.w.pt - padH;
  s.extraLeft = g.w.pl - padW;
  int64_t h = g.h + g.w.pt + g.w.pb - 2 * padH;
  int64_t w = g.wd + g.w.pl + g.w.pr - 2 * padW;
  s.padded = h != g.h || w != g.wd;
  s.srcH = g.h, s.srcW = g.wd;
  // cuDNN's descriptors hold int sizes and int strides: every tensor, the
  // padded copy included, must index within an int.
  std::vector<int64_t> padX = {g.n, g.c, h, w};
  const std::pair<const char *, const std::vector<int64_t> *> tensors[] = {
      {"input", &x}, {"weight", &wt}, {"output", &y}, {"padded input", &padX}};
  for (auto [name, shape] : tensors)
    if (product(*shape) > INT_MAX)
      throw Error(std::string("the convolution's ") + name + " " +
                  formatShape(*shape) +
                  " has more than 2^31 - 1 elements, more than cuDNN's "
                  "descriptors index; use a smaller batch");
  for (int64_t v : {g.w.sh, g.w.sw, g.w.dh, g.w.dw, padH, padW, g.groups})
    if (v > INT_MAX)
      throw Error("convolution stride, dilation, pad or group count " +
                  std::to_string(v) + " is beyond cuDNN's int");
  s.n = int(g.n), s.c = int(g.c), s.h = int(h), s.w = int(w);
  s.o = int(g.o), s.cg = int(g.cg), s.kh = int(g.w.kh), s.kw = int(g.w.kw);
  s.oh = int(g.oh), s.ow = int(g.ow);
  s.padH = int(padH), s.padW = int(padW);
  s.strideH = int(g.w.sh), s.strideW = int(g.w.sw);
  s.dilH = int(g.w.dh), s.dilW = int(g.w.dw);
  s.groups = int(g.groups);
  int64_t outElems = pass == ConvPass::Forward     ? product(y)
                     : pass == ConvPass::GradInput ? product(x)
                                                   : product(wt);
  s.emptyOutput = outElems == 0;
  // What each pass sums over: input channels and taps (forward), output
  // channels and taps (input gradient), batch and output pixels (weight
  // gradient).
  int64_t summed = pass == ConvPass::Forward     ? g.k
                   : pass == ConvPass::GradInput ? g.og * g.w.kh * g.w.kw
                                                 : g.n * g.p;
  s.emptySum = !s.emptyOutput && summed == 0;
  return s;
}

std::optional<size_t> pickConvAlgo(const std::vector<ConvAlgoCandidate> &c,
                                   int64_t cap) {
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i].ok && c[i].deterministic && c[i].workspace <= cap)
      return i;
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i].ok && c[i].workspace <= cap)
      return i;
  std::optional<size_t> least;
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i].ok && (!least || c[i].workspace < c[*least].workspace))
      least = i;
  return least;
}

} // namespace tcc::rt::cuda

//===- CudnnConvPlan.h - What cuDNN is told about a convolution -*- C++ -*-===//
//
// The host half of the CUDA convolutions (CudnnConv.cpp): for a conv2d,
// conv2d_grad_input or conv2d_grad_weight instr, the sizes cuDNN's
// descriptors take, and which of cuDNN's heuristic answers to keep. No
// cuDNN or CUDA here, so all of it is tested where there is no GPU.
//
// cuDNN's convolution descriptor takes one pad per axis, the same at both
// ends, while the ABI's pads are [top, left, bottom, right]. An asymmetric
// pair becomes the smaller pad for cuDNN plus the difference written as
// zeros: the input (or the input gradient) lives in a zero-padded copy in
// the instr's scratch, whose extent along the axis is then H + pt + pb -
// 2 min(pt, pb), so cuDNN's output size (in + 2p - d (k - 1) - 1) / s + 1
// equals the ABI's.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDNNCONVPLAN_H
#define TCC_RUNTIME_CUDA_CUDNNCONVPLAN_H

#include "runtime/core/abi/KernelAttrs.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace tcc::rt::cuda {

/// Which of the three convolution kernels an instr runs.
enum class ConvPass { Forward, GradInput, GradWeight };

/// One convolution as cuDNN's legacy API sees it (all f32, NCHW).
struct CudnnConvShape {
  ConvPass pass = ConvPass::Forward;
  /// The input cuDNN reads or writes: x [n, c, h, w], padded when the ABI's
  /// pads are asymmetric (then h, w include the extra rows and columns).
  int n = 0, c = 0, h = 0, w = 0;
  /// The unpadded input's extent (h, w when nothing is padded).
  int64_t srcH = 0, srcW = 0;
  /// Extra zero rows above and columns left of the input in its padded
  /// copy (the rest of the difference is below and right).
  int64_t extraTop = 0, extraLeft = 0;
  bool padded = false;
  /// The filter [o, c / groups, kh, kw] and the output [n, o, oh, ow].
  int o = 0, cg = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  /// The convolution descriptor: symmetric pads, strides, dilations.
  int padH = 0, padW = 0, strideH = 1, strideW = 1, dilH = 1, dilW = 1;
  int groups = 1;
  bool bias = false; // conv2d's optional third input
  /// An empty output: the instr does nothing.
  bool emptyOutput = false;
  /// The output is a sum over nothing (no input channels; no batch for the
  /// weight gradient): zeros (plus the bias), no cuDNN call.
  bool emptySum = false;

  /// Bytes of the padded copy (f32), 0 when nothing is padded.
  int64_t paddedBytes() const;
};

/// cuDNN's output extent along one axis for input extent `in`, symmetric
/// pad `pad`, window `k`, stride `s` and dilation `d`.
int64_t cudnnOutDim(int64_t in, int64_t pad, int64_t k, int64_t s, int64_t d);

/// The shape of a convolution instr of pass `pass` whose input is
/// `x` [N, C, H, W], weight `wt` [O, C/g, kH, kW] and output `y`
/// [N, O, OH, OW] (conv2d's names for the gradients' operands too), as
/// checked by the ABI's check. Throws Error when cuDNN cannot take it (a
/// tensor over 2^31 - 1 elements: its descriptors hold int strides).
CudnnConvShape cudnnConvShape(ConvPass pass, const std::vector<int64_t> &x,
                              const std::vector<int64_t> &wt,
                              const std::vector<int64_t> &y,
                              const abi::Conv2dAttrs &a, bool bias);

/// One of cuDNN's heuristic answers for a convolution: its algorithm code,
/// whether cuDNN says it runs (status success), whether it is deterministic
/// and the workspace bytes it needs.
struct ConvAlgoCandidate {
  int algo = 0;
  bool ok = false;
  bool deterministic = false;
  int64_t workspace = 0;
};

/// The most workspace an algorithm may take when another fits under it.
inline constexpr int64_t kConvWorkspaceCap = int64_t(512) << 20;

/// Which answer to keep (candidates in cuDNN's order, best first): the
/// first deterministic one that runs within `cap` bytes of workspace, so a
/// step repeats bit for bit as it does on the CPU; else the first that
/// runs within `cap`; else the one that runs with the least workspace.
/// None when no answer runs.
std::optional<size_t> pickConvAlgo(const std::vector<ConvAlgoCandidate> &c,
                                   int64_t cap = kConvWorkspaceCap);

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDNNCONVPLAN_H

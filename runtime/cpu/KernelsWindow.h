//===- KernelsWindow.h - Geometry of 2-D sliding windows ------------------===//
//
// Shared by the convolution and pooling kernels: reading and checking the
// window attributes of an Instr, and the output-size rule of the compiler
// (dialects/tcc/TccOpsConv.cpp), which the checks re-derive because
// artifacts are untrusted input.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CPU_KERNELSWINDOW_H
#define TCC_RUNTIME_CPU_KERNELSWINDOW_H

#include "runtime/cpu/KernelsInternal.h"

#include <cstdint>
#include <vector>

namespace tcc::rt::kernels {

/// A 2-D window: kernel, strides, pads [top, left, bottom, right], dilations.
struct Window2d {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  int64_t dh = 1, dw = 1;
  bool ceil = false;
};

/// The output extent along one axis (< 1 when the window does not fit);
/// with `ceil`, a last window starting in the end padding is dropped.
inline int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t pb,
                         int64_t pe, int64_t d, bool ceil) {
  int64_t span = in + pb + pe - d * (k - 1) - 1;
  if (span < 0)
    return 0;
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + pb)
    --out;
  return out;
}

/// Reads strides, pads and dilations from iattrs[at, at + 8) (the kernel
/// size is set by the caller). Throws Error for values out of range.
Window2d readWindow(const KernelSig &s, size_t at);

/// Checks that `x` is [N, C, H, W] and `y` is [N, channels, OH, OW] for `w`;
/// `xIsInput`/`yIsInput` say where each operand is, `xi`/`yi` its index.
void expectWindowShapes(const KernelSig &s, const Window2d &w, bool xIsInput,
                        size_t xi, bool yIsInput, size_t yi, int64_t channels);

} // namespace tcc::rt::kernels

#endif // TCC_RUNTIME_CPU_KERNELSWINDOW_H

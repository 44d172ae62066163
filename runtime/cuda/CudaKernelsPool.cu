//===- CudaKernelsPool.cu - 2-D max and average pooling with gradients ----===//
//
// Ports of KernelsPool.cpp: one thread per output element walks its window
// through runtime/core/abi/PoolWindow.h, the functions the CPU kernels call,
// so both backends share the boundary rules. The gradients scatter with
// atomicAdd into a zeroed dx: where windows overlap (stride < kernel) the
// order of the additions, and so the last bits of the sums, can differ
// between runs.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/abi/PoolWindow.h"
#include "runtime/core/abi/WindowGeometry.h"
#include "runtime/cuda/CudaKernelsCommon.cuh"

namespace tcc::rt::cuda {

static constexpr int kBlock = 256;

__global__ void maxPoolKernel(const float *x, float *y, long long *idx,
                              long long planes, long long h, long long wd,
                              long long oh, long long ow, abi::PoolGeom g) {
  long long n = planes * oh * ow;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    long long c = i % ow, r = (i / ow) % oh, pl = i / (oh * ow);
    idx[i] = abi::maxPoolWindow(g, x + pl * h * wd, h, wd, r, c, &y[i]);
  }
}

/// dx[plane, idx] += dy for every output; an index outside the plane (a
/// corrupted artifact) writes nothing and is reported.
__global__ void maxPoolGradKernel(const float *dy, const long long *idx,
                                  float *dx, long long planes, long long per,
                                  long long size, long long *err) {
  long long n = planes * per;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    long long at = idx[i];
    if (at < 0) // a window entirely in the padding: no input element
      continue;
    if (at >= size) {
      raiseError(err, i, at, size);
      continue;
    }
    atomicAdd(dx + (i / per) * size + at, dy[i]);
  }
}

__global__ void avgPoolKernel(const float *x, float *y, long long planes,
                              long long h, long long wd, long long oh,
                              long long ow, abi::PoolGeom g, bool includePad) {
  long long n = planes * oh * ow;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    long long c = i % ow, r = (i / ow) % oh, pl = i / (oh * ow);
    abi::AvgWindow w = abi::avgPoolWindow(g, includePad, h, wd, r, c);
    const float *plane = x + pl * h * wd;
    float sum = 0.0f;
    for (long long ih = w.h0; ih < w.h1; ++ih)
      for (long long iw = w.w0; iw < w.w1; ++iw)
        sum += plane[ih * wd + iw];
    y[i] = w.divisor > 0 ? sum / w.divisor : 0.0f;
  }
}

__global__ void avgPoolGradKernel(const float *dy, float *dx, long long planes,
                                  long long h, long long wd, long long oh,
                                  long long ow, abi::PoolGeom g,
                                  bool includePad) {
  long long n = planes * oh * ow;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    long long c = i % ow, r = (i / ow) % oh, pl = i / (oh * ow);
    abi::AvgWindow w = abi::avgPoolWindow(g, includePad, h, wd, r, c);
    if (w.divisor <= 0)
      continue;
    float v = dy[i] / w.divisor;
    float *plane = dx + pl * h * wd;
    for (long long ih = w.h0; ih < w.h1; ++ih)
      for (long long iw = w.w0; iw < w.w1; ++iw)
        atomicAdd(plane + ih * wd + iw, v);
  }
}

void launch_max_pool2d(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0], &I = a.out[1];
  abi::PoolGeom g = abi::poolGeom(
      abi::poolWindow(abi::attrs<abi::KernelId::MaxPool2d>(a.instr)));
  if (Y.numel == 0)
    return;
  TCC_LAUNCH(maxPoolKernel, gridFor(Y.numel, kBlock, a.smCount), kBlock,
             a.stream)
  (static_cast<const float *>(X.data), static_cast<float *>(Y.data),
   static_cast<long long *>(I.data), X.dim(0) * X.dim(1), X.dim(2), X.dim(3),
   Y.dim(2), Y.dim(3), g);
  checkLaunch(a.instr.kernel.c_str());
}

void launch_max_pool2d_grad(const CudaArgs &a) {
  const TensorView &DY = a.in[0], &I = a.in[1], &DX = a.out[0];
  if (DX.numel == 0)
    return;
  TCC_CUDA_CHECK(
      cudaMemsetAsync(DX.data, 0, DX.numel * sizeof(float), a.stream));
  if (DY.numel == 0)
    return;
  TCC_LAUNCH(maxPoolGradKernel, gridFor(DY.numel, kBlock, a.smCount), kBlock,
             a.stream)
  (static_cast<const float *>(DY.data), static_cast<const long long *>(I.data),
   static_cast<float *>(DX.data), DY.dim(0) * DY.dim(1), DY.dim(2) * DY.dim(3),
   DX.dim(2) * DX.dim(3), a.err);
  checkLaunch(a.instr.kernel.c_str());
}

void launch_avg_pool2d(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  const abi::AvgPool2dAttrs at = abi::attrs<abi::KernelId::AvgPool2d>(a.instr);
  if (Y.numel == 0)
    return;
  TCC_LAUNCH(avgPoolKernel, gridFor(Y.numel, kBlock, a.smCount), kBlock,
             a.stream)
  (static_cast<const float *>(X.data), static_cast<float *>(Y.data),
   X.dim(0) * X.dim(1), X.dim(2), X.dim(3), Y.dim(2), Y.dim(3),
   abi::poolGeom(abi::poolWindow(at)), at.countIncludePad != 0);
  checkLaunch(a.instr.kernel.c_str());
}

void launch_avg_pool2d_grad(const CudaArgs &a) {
  const TensorView &DY = a.in[0], &DX = a.out[0];
  const abi::AvgPool2dAttrs at =
      abi::attrs<abi::KernelId::AvgPool2dGrad>(a.instr);
  if (DX.numel == 0)
    return;
  TCC_CUDA_CHECK(
      cudaMemsetAsync(DX.data, 0, DX.numel * sizeof(float), a.stream));
  if (DY.numel == 0)
    return;
  TCC_LAUNCH(avgPoolGradKernel, gridFor(DY.numel, kBlock, a.smCount), kBlock,
             a.stream)
  (static_cast<const float *>(DY.data), static_cast<float *>(DX.data),
   DX.dim(0) * DX.dim(1), DX.dim(2), DX.dim(3), DY.dim(2), DY.dim(3),
   abi::poolGeom(abi::poolWindow(at)), at.countIncludePad != 0);
  checkLaunch(a.instr.kernel.c_str());
}

} // namespace tcc::rt::cuda

//===- CudaKernelsBatchNorm.cu - Batch normalization with batch statistics ===//
//
// Ports of KernelsBatchNorm.cpp: one block per channel strides over its
// N * S elements of x [N, C, S...]; the sums are in double, the variance in
// a second, centred pass, and the formulas are the CPU kernel's (PyTorch's),
// so both backends compute the same statistics. The block sums run in a
// fixed order: results repeat bit for bit.
//
//   batch_norm_train       in [x, scale, bias] out [y, mean, var], f [eps]
//   batch_norm_train_grad  in [dy, x, scale, mean, var]
//                          out [dx, dscale, dbias], f [eps]
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaKernelsCommon.cuh"

namespace tcc::rt::cuda {

static constexpr int kBlock = 256;

/// The offset of element e (of N * S) of channel c.
__device__ __forceinline__ long long
channelOffset(long long e, long long c, long long channels, long long s) {
  return ((e / s) * channels + c) * s + e % s;
}

__global__ void batchNormKernel(const float *x, const float *scale,
                                const float *bias, float *y, float *meanOut,
                                float *varOut, long long channels, long long s,
                                long long count, double eps) {
  __shared__ double shared[32];
  long long c = blockIdx.x;
  double sum = 0.0;
  for (long long e = threadIdx.x; e < count; e += blockDim.x)
    sum += x[channelOffset(e, c, channels, s)];
  double mean = blockSum(sum, shared) / count;
  double sq = 0.0;
  for (long long e = threadIdx.x; e < count; e += blockDim.x) {
    double t = x[channelOffset(e, c, channels, s)] - mean;
    sq += t * t;
  }
  double var = blockSum(sq, shared) / count;
  double istd = 1.0 / sqrt(var + eps);
  float alpha = static_cast<float>(istd * scale[c]);
  float beta = static_cast<float>(bias[c] - mean * istd * scale[c]);
  for (long long e = threadIdx.x; e < count; e += blockDim.x) {
    long long o = channelOffset(e, c, channels, s);
    y[o] = x[o] * alpha + beta;
  }
  if (threadIdx.x == 0) {
    meanOut[c] = static_cast<float>(mean);
    varOut[c] = static_cast<float>(var);
  }
}

__global__ void batchNormGradKernel(const float *dy, const float *x,
                                    const float *scale, const float *mean,
                                    const float *var, float *dx, float *dscale,
                                    float *dbias, long long channels,
                                    long long s, long long count, double eps) {
  __shared__ double shared[32];
  long long c = blockIdx.x;
  double mu = mean[c], s1 = 0.0, s2 = 0.0;
  for (long long e = threadIdx.x; e < count; e += blockDim.x) {
    long long o = channelOffset(e, c, channels, s);
    s1 += dy[o];
    s2 += dy[o] * (x[o] - mu);
  }
  double sumDy = blockSum(s1, shared);
  double sumDyXmu = blockSum(s2, shared);
  double istd = 1.0 / sqrt(static_cast<double>(var[c]) + eps);
  // dx = (dy - sum(dy)/M - (x - mean) k) istd scale, with
  // k = sum(dy (x - mean)) istd^2 / M, in float as the CPU kernel.
  float gm = static_cast<float>(sumDy / count);
  float k = static_cast<float>(sumDyXmu * istd * istd / count);
  float co = static_cast<float>(istd * scale[c]);
  float muf = mean[c];
  for (long long e = threadIdx.x; e < count; e += blockDim.x) {
    long long o = channelOffset(e, c, channels, s);
    dx[o] = (dy[o] - gm - (x[o] - muf) * k) * co;
  }
  if (threadIdx.x == 0) {
    dscale[c] = static_cast<float>(sumDyXmu * istd);
    dbias[c] = static_cast<float>(sumDy);
  }
}

/// [N, C, S]: the channel count and the product of the trailing dims.
static void channelDims(const TensorView &x, long long &channels,
                        long long &s) {
  channels = x.dim(1);
  s = 1;
  for (size_t d = 2; d < x.rank(); ++d)
    s *= x.dim(d);
}

void launch_batch_norm_train(const CudaArgs &a) {
  const TensorView &X = a.in[0];
  long long channels, s;
  channelDims(X, channels, s);
  long long count = X.dim(0) * s;
  if (channels == 0)
    return;
  TCC_LAUNCH(batchNormKernel, (unsigned)channels, kBlock, a.stream)
  (static_cast<const float *>(X.data), static_cast<const float *>(a.in[1].data),
   static_cast<const float *>(a.in[2].data),
   static_cast<float *>(a.out[0].data), static_cast<float *>(a.out[1].data),
   static_cast<float *>(a.out[2].data), channels, s, count,
   abi::attrs<abi::KernelId::BatchNormTrain>(a.instr).eps);
  checkLaunch(a.instr.kernel.c_str());
}

void launch_batch_norm_train_grad(const CudaArgs &a) {
  const TensorView &X = a.in[1];
  long long channels, s;
  channelDims(X, channels, s);
  long long count = X.dim(0) * s;
  if (channels == 0)
    return;
  TCC_LAUNCH(batchNormGradKernel, (unsigned)channels, kBlock, a.stream)
  (static_cast<const float *>(a.in[0].data), static_cast<const float *>(X.data),
   static_cast<const float *>(a.in[2].data),
   static_cast<const float *>(a.in[3].data),
   static_cast<const float *>(a.in[4].data),
   static_cast<float *>(a.out[0].data), static_cast<float *>(a.out[1].data),
   static_cast<float *>(a.out[2].data), channels, s, count,
   abi::attrs<abi::KernelId::BatchNormTrainGrad>(a.instr).eps);
  checkLaunch(a.instr.kernel.c_str());
}

} // namespace tcc::rt::cuda

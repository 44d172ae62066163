//===- CudaKernelsBatchNorm.cu - Batch normalization with batch statistics ===//
//
// Ports of KernelsBatchNorm.cpp: the sums are in double, the variance in a
// second, centred pass, and the formulas are the CPU kernel's (PyTorch's),
// so both backends compute the same statistics.
//
// A channel's N * S elements of x [N, C, S...] are cut into slices of
// kBnSlice (bnSlices): block (c, k) of a [C, slices] grid sums slice k of
// channel c into the scratch, and the next pass's blocks add a channel's
// slice sums in slice order before using them. So a ResNet stem's 64
// channels of 800k elements each fill the GPU with 16k blocks, not 64, and
// the results repeat bit for bit (no atomics).
//
//   batch_norm_train       in [x, scale, bias] out [y, mean, var], f [eps]
//                          (3 passes: sums, centred squares, y)
//   batch_norm_train_grad  in [dy, x, scale, mean, var]
//                          out [dx, dscale, dbias], f [eps]
//                          (2 passes: the two sums, dx)
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaKernelsCommon.cuh"

namespace tcc::rt::cuda {

static constexpr int kBlock = 256;
/// Elements of a channel one block sums; at most kBnMaxSlices a channel.
static constexpr long long kBnSlice = 2048;
static constexpr long long kBnMaxSlices = 256;

/// The slices of a channel of `count` elements.
static long long bnSlices(long long count) {
  long long s = (count + kBnSlice - 1) / kBnSlice;
  return s < 1 ? 1 : s > kBnMaxSlices ? kBnMaxSlices : s;
}

/// Channel c's elements [begin, end) of slice k of `slices`.
__device__ __forceinline__ void sliceRange(long long count, long long slices,
                                           long long k, long long &begin,
                                           long long &end) {
  long long per = (count + slices - 1) / slices;
  begin = k * per;
  end = begin + per < count ? begin + per : count;
}

/// The offset of element e (of N * S) of channel c.
__device__ __forceinline__ long long
channelOffset(long long e, long long c, long long channels, long long s) {
  return ((e / s) * channels + c) * s + e % s;
}

/// The sum of a channel's `slices` partial sums, in slice order (every
/// thread gets it).
__device__ __forceinline__ double sliceTotal(const double *partial,
                                             long long slices) {
  double t = 0.0;
  for (long long k = 0; k < slices; ++k)
    t += partial[k];
  return t;
}

// Pass 1: sum[c, k] = the sum of slice k of channel c.
__global__ void bnSumKernel(const float *x, double *sum, long long channels,
                            long long s, long long count, long long slices) {
  __shared__ double shared[32];
  long long c = blockIdx.x, k = blockIdx.y, begin, end;
  sliceRange(count, slices, k, begin, end);
  double v = 0.0;
  for (long long e = begin + threadIdx.x; e < end; e += blockDim.x)
    v += x[channelOffset(e, c, channels, s)];
  v = blockSum(v, shared);
  if (threadIdx.x == 0)
    sum[c * slices + k] = v;
}

// Pass 2: sq[c, k] = the sum of (x - mean)^2 over slice k of channel c.
__global__ void bnSquaresKernel(const float *x, const double *sum, double *sq,
                                long long channels, long long s,
                                long long count, long long slices) {
  __shared__ double shared[32];
  long long c = blockIdx.x, k = blockIdx.y, begin, end;
  sliceRange(count, slices, k, begin, end);
  double mean = sliceTotal(sum + c * slices, slices) / count;
  double v = 0.0;
  for (long long e = begin + threadIdx.x; e < end; e += blockDim.x) {
    double t = x[channelOffset(e, c, channels, s)] - mean;
    v += t * t;
  }
  v = blockSum(v, shared);
  if (threadIdx.x == 0)
    sq[c * slices + k] = v;
}

// Pass 3: y over slice k of channel c; slice 0 writes mean and var.
__global__ void bnApplyKernel(const float *x, const float *scale,
                              const float *bias, const double *sum,
                              const double *sq, float *y, float *meanOut,
                              float *varOut, long long channels, long long s,
                              long long count, long long slices, double eps) {
  long long c = blockIdx.x, k = blockIdx.y, begin, end;
  sliceRange(count, slices, k, begin, end);
  double mean = sliceTotal(sum + c * slices, slices) / count;
  double var = sliceTotal(sq + c * slices, slices) / count;
  double istd = 1.0 / sqrt(var + eps);
  float alpha = static_cast<float>(istd * scale[c]);
  float beta = static_cast<float>(bias[c] - mean * istd * scale[c]);
  for (long long e = begin + threadIdx.x; e < end; e += blockDim.x) {
    long long o = channelOffset(e, c, channels, s);
    y[o] = x[o] * alpha + beta;
  }
  if (k == 0 && threadIdx.x == 0) {
    meanOut[c] = static_cast<float>(mean);
    varOut[c] = static_cast<float>(var);
  }
}

// Gradient pass 1: per slice, sum(dy) and sum(dy (x - mean)).
__global__ void bnGradSumsKernel(const float *dy, const float *x,
                                 const float *mean, double *sumDy,
                                 double *sumDyXmu, long long channels,
                                 long long s, long long count,
                                 long long slices) {
  __shared__ double shared[32];
  long long c = blockIdx.x, k = blockIdx.y, begin, end;
  sliceRange(count, slices, k, begin, end);
  double mu = mean[c], s1 = 0.0, s2 = 0.0;
  for (long long e = begin + threadIdx.x; e < end; e += blockDim.x) {
    long long o = channelOffset(e, c, channels, s);
    s1 += dy[o];
    s2 += dy[o] * (x[o] - mu);
  }
  s1 = blockSum(s1, shared);
  s2 = blockSum(s2, shared);
  if (threadIdx.x == 0) {
    sumDy[c * slices + k] = s1;
    sumDyXmu[c * slices + k] = s2;
  }
}

// Gradient pass 2: dx over slice k of channel c; slice 0 writes dscale and
// dbias.
__global__ void
bnGradApplyKernel(const float *dy, const float *x, const float *scale,
                  const float *mean, const float *var, const double *sumDyP,
                  const double *sumDyXmuP, float *dx, float *dscale,
                  float *dbias, long long channels, long long s,
                  long long count, long long slices, double eps) {
  long long c = blockIdx.x, k = blockIdx.y, begin, end;
  sliceRange(count, slices, k, begin, end);
  double sumDy = sliceTotal(sumDyP + c * slices, slices);
  double sumDyXmu = sliceTotal(sumDyXmuP + c * slices, slices);
  double istd = 1.0 / sqrt(static_cast<double>(var[c]) + eps);
  // dx = (dy - sum(dy)/M - (x - mean) k) istd scale, with
  // k = sum(dy (x - mean)) istd^2 / M, in float as the CPU kernel.
  float gm = static_cast<float>(sumDy / count);
  float kk = static_cast<float>(sumDyXmu * istd * istd / count);
  float co = static_cast<float>(istd * scale[c]);
  float muf = mean[c];
  for (long long e = begin + threadIdx.x; e < end; e += blockDim.x) {
    long long o = channelOffset(e, c, channels, s);
    dx[o] = (dy[o] - gm - (x[o] - muf) * kk) * co;
  }
  if (k == 0 && threadIdx.x == 0) {
    dscale[c] = static_cast<float>(sumDyXmu * istd);
    dbias[c] = static_cast<float>(sumDy);
  }
}

/// [N, C, S]: the channel count, the product of the trailing dims and the
/// elements of a channel.
static void channelDims(const std::vector<int64_t> &x, long long &channels,
                        long long &s, long long &count) {
  channels = x[1];
  s = 1;
  for (size_t d = 2; d < x.size(); ++d)
    s *= x[d];
  count = x[0] * s;
}

// Two [C, slices] arrays of doubles, for both kernels.
int64_t prepare_batch_norm(const Instr &in, const std::vector<TensorInfo> &t) {
  const TensorInfo &x =
      t[abi::is(in, abi::KernelId::BatchNormTrain) ? in.inputs[0]
                                                   : in.inputs[1]];
  long long channels, s, count;
  channelDims(x.shape, channels, s, count);
  return 2 * channels * bnSlices(count) * static_cast<int64_t>(sizeof(double));
}

void launch_batch_norm_train(const CudaArgs &a) {
  const TensorView &X = a.in[0];
  long long channels, s, count;
  channelDims(*X.shape, channels, s, count);
  if (channels == 0)
    return;
  long long slices = bnSlices(count);
  double *sum = static_cast<double *>(a.scratch);
  double *sq = sum + channels * slices;
  dim3 grid(static_cast<unsigned>(channels), static_cast<unsigned>(slices));
  const float *x = static_cast<const float *>(X.data);
  TCC_LAUNCH(bnSumKernel, grid, kBlock, a.stream)
  (x, sum, channels, s, count, slices);
  checkLaunch(a.instr.kernel.c_str());
  TCC_LAUNCH(bnSquaresKernel, grid, kBlock, a.stream)
  (x, sum, sq, channels, s, count, slices);
  checkLaunch(a.instr.kernel.c_str());
  TCC_LAUNCH(bnApplyKernel, grid, kBlock, a.stream)
  (x, static_cast<const float *>(a.in[1].data),
   static_cast<const float *>(a.in[2].data), sum, sq,
   static_cast<float *>(a.out[0].data), static_cast<float *>(a.out[1].data),
   static_cast<float *>(a.out[2].data), channels, s, count, slices,
   abi::attrs<abi::KernelId::BatchNormTrain>(a.instr).eps);
  checkLaunch(a.instr.kernel.c_str());
}

void launch_batch_norm_train_grad(const CudaArgs &a) {
  const TensorView &X = a.in[1];
  long long channels, s, count;
  channelDims(*X.shape, channels, s, count);
  if (channels == 0)
    return;
  long long slices = bnSlices(count);
  double *sumDy = static_cast<double *>(a.scratch);
  double *sumDyXmu = sumDy + channels * slices;
  dim3 grid(static_cast<unsigned>(channels), static_cast<unsigned>(slices));
  const float *dy = static_cast<const float *>(a.in[0].data);
  const float *x = static_cast<const float *>(X.data);
  const float *mean = static_cast<const float *>(a.in[3].data);
  TCC_LAUNCH(bnGradSumsKernel, grid, kBlock, a.stream)
  (dy, x, mean, sumDy, sumDyXmu, channels, s, count, slices);
  checkLaunch(a.instr.kernel.c_str());
  TCC_LAUNCH(bnGradApplyKernel, grid, kBlock, a.stream)
  (dy, x, static_cast<const float *>(a.in[2].data), mean,
   static_cast<const float *>(a.in[4].data), sumDy, sumDyXmu,
   static_cast<float *>(a.out[0].data), static_cast<float *>(a.out[1].data),
   static_cast<float *>(a.out[2].data), channels, s, count, slices,
   abi::attrs<abi::KernelId::BatchNormTrainGrad>(a.instr).eps);
  checkLaunch(a.instr.kernel.c_str());
}

} // namespace tcc::rt::cuda

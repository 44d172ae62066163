//===- CudaKernelsRows.cu - Softmax, losses, layer norm -------------------===//
//
// Ports of KernelsSoftmax.cpp, KernelsLoss.cpp and KernelsNorm.cpp. Rows
// (the softmax axis when it is innermost, a position's logits, a layer
// norm row) get one block each; reductions run in a fixed order, so every
// kernel here is deterministic. Where the CPU accumulates in double (the
// losses' sums, layer norm statistics and parameter gradients) so do these.
// Losses are reduced in two steps: per-row (or per-block) partial sums in
// device scratch, then one block sums them in order.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaKernelsCommon.cuh"

#include <algorithm>

namespace tcc::rt::cuda {

static constexpr int kBlock = 256;

namespace {
/// The operand viewed as [outer, len, inner] around the axis.
struct AxisView {
  long long outer = 1, len = 1, inner = 1;
};
} // namespace

static AxisView axisView(const CudaArgs &a, const TensorView &t) {
  AxisView v;
  // The softmax family shares AxisAttrs (an axis checkInstr bounded).
  size_t axis = static_cast<size_t>(
      abi::normalizeAxis(abi::attrsOf<abi::AxisAttrs>(a.instr).axis, t.rank()));
  for (size_t d = 0; d < t.rank(); ++d) {
    if (d < axis)
      v.outer *= t.dim(d);
    else if (d == axis)
      v.len = t.dim(d);
    else
      v.inner *= t.dim(d);
  }
  return v;
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax and their gradients
//===----------------------------------------------------------------------===//

/// The axis is innermost: one block per row.
__global__ void __launch_bounds__(1024)
    softmaxRowsKernel(const void *x, int tx, void *y, int ty, long long rows,
                      long long len, bool logOut) {
  __shared__ float shared[32];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    long long base = row * len;
    float mx = -INFINITY;
    for (long long j = threadIdx.x; j < len; j += blockDim.x)
      mx = fmaxf(mx, ldf(x, tx, base + j));
    mx = blockMax(mx, shared);
    float sum = 0.0f;
    for (long long j = threadIdx.x; j < len; j += blockDim.x)
      sum += expf(ldf(x, tx, base + j) - mx);
    sum = blockSum(sum, shared);
    if (logOut) {
      // (x - max) - log(sum), as the CPU: adding the max back first would
      // round away the low bits of large logits.
      float ls = logf(sum);
      for (long long j = threadIdx.x; j < len; j += blockDim.x)
        stf(y, ty, base + j, (ldf(x, tx, base + j) - mx) - ls);
    } else {
      float inv = 1.0f / sum;
      for (long long j = threadIdx.x; j < len; j += blockDim.x)
        stf(y, ty, base + j, expf(ldf(x, tx, base + j) - mx) * inv);
    }
  }
}

/// The axis has inner dims after it: one thread per (outer, inner) column,
/// coalesced over inner.
__global__ void softmaxColsKernel(const void *x, int tx, void *y, int ty,
                                  AxisView v, bool logOut) {
  long long cols = v.outer * v.inner;
  for (long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x; c < cols;
       c += (long long)gridDim.x * blockDim.x) {
    long long base = (c / v.inner) * v.len * v.inner + c % v.inner;
    float mx = -INFINITY;
    for (long long l = 0; l < v.len; ++l)
      mx = fmaxf(mx, ldf(x, tx, base + l * v.inner));
    float sum = 0.0f;
    for (long long l = 0; l < v.len; ++l)
      sum += expf(ldf(x, tx, base + l * v.inner) - mx);
    float ls = logf(sum), inv = 1.0f / sum;
    for (long long l = 0; l < v.len; ++l) {
      float xi = ldf(x, tx, base + l * v.inner);
      stf(y, ty, base + l * v.inner,
          logOut ? (xi - mx) - ls : expf(xi - mx) * inv);
    }
  }
}

void launch_softmax(const CudaArgs &a) {
  const TensorView &X = a.in[0], &Y = a.out[0];
  AxisView v = axisView(a, X);
  bool logOut = abi::is(a.instr, abi::KernelId::LogSoftmax);
  if (X.numel == 0)
    return;
  if (v.inner == 1)
    TCC_LAUNCH(softmaxRowsKernel, rowGrid(v.outer), rowBlock(v.len), a.stream)
  (X.data, dt(X), Y.data, dt(Y), v.outer, v.len, logOut);
  else TCC_LAUNCH(softmaxColsKernel,
                  gridFor(v.outer * v.inner, kBlock, a.smCount), kBlock,
                  a.stream)(X.data, dt(X), Y.data, dt(Y), v, logOut);
  checkLaunch(a.instr.kernel.c_str());
}

/// dx = y * (dy - sum(dy*y)) (softmax) or dy - exp(y) * sum(dy)
/// (log_softmax), y the forward output; one block per row.
__global__ void __launch_bounds__(1024)
    softmaxGradRowsKernel(const void *dy, int tdy, const void *y, int ty,
                          void *dx, int tdx, long long rows, long long len,
                          bool logIn) {
  __shared__ float shared[32];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    long long base = row * len;
    float sum = 0.0f;
    for (long long j = threadIdx.x; j < len; j += blockDim.x) {
      float d = ldf(dy, tdy, base + j);
      sum += logIn ? d : d * ldf(y, ty, base + j);
    }
    sum = blockSum(sum, shared);
    for (long long j = threadIdx.x; j < len; j += blockDim.x) {
      float d = ldf(dy, tdy, base + j), yj = ldf(y, ty, base + j);
      stf(dx, tdx, base + j, logIn ? d - expf(yj) * sum : yj * (d - sum));
    }
  }
}

__global__ void softmaxGradColsKernel(const void *dy, int tdy, const void *y,
                                      int ty, void *dx, int tdx, AxisView v,
                                      bool logIn) {
  long long cols = v.outer * v.inner;
  for (long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x; c < cols;
       c += (long long)gridDim.x * blockDim.x) {
    long long base = (c / v.inner) * v.len * v.inner + c % v.inner;
    float sum = 0.0f;
    for (long long l = 0; l < v.len; ++l) {
      float d = ldf(dy, tdy, base + l * v.inner);
      sum += logIn ? d : d * ldf(y, ty, base + l * v.inner);
    }
    for (long long l = 0; l < v.len; ++l) {
      long long k = base + l * v.inner;
      float d = ldf(dy, tdy, k), yk = ldf(y, ty, k);
      stf(dx, tdx, k, logIn ? d - expf(yk) * sum : yk * (d - sum));
    }
  }
}

void launch_softmax_grad(const CudaArgs &a) {
  const TensorView &DY = a.in[0], &Y = a.in[1], &DX = a.out[0];
  AxisView v = axisView(a, DY);
  bool logIn = abi::is(a.instr, abi::KernelId::LogSoftmaxGrad);
  if (DY.numel == 0)
    return;
  if (v.inner == 1)
    TCC_LAUNCH(softmaxGradRowsKernel, rowGrid(v.outer), rowBlock(v.len),
               a.stream)
  (DY.data, dt(DY), Y.data, dt(Y), DX.data, dt(DX), v.outer, v.len, logIn);
  else TCC_LAUNCH(softmaxGradColsKernel,
                  gridFor(v.outer * v.inner, kBlock, a.smCount), kBlock,
                  a.stream)(DY.data, dt(DY), Y.data, dt(Y), DX.data, dt(DX), v,
                            logIn);
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// out[0] = sum(parts[0..n)) / divisor (NaN for a divisor of 0, like the
/// CPU's mean of nothing); one block of 1024 threads, fixed order. With
/// `labels`, the divisor is the count of labels[0..n) other than `ignore`
/// (the cross-entropy's counted positions) and no position gives 0.
__global__ void __launch_bounds__(1024)
    finalMeanKernel(const double *parts, long long n, long long divisor,
                    const long long *labels, long long ignore, void *out,
                    int tout) {
  __shared__ double shared[32];
  double s = 0.0, counted = 0.0;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) {
    s += parts[i];
    if (labels)
      counted += labels[i] != ignore ? 1.0 : 0.0;
  }
  s = blockSum(s, shared);
  if (labels) {
    __syncthreads(); // the shared slots are read before they are reused
    counted = blockSum(counted, shared);
  }
  if (threadIdx.x != 0)
    return;
  if (labels)
    stf(out, tout, 0, counted > 0 ? static_cast<float>(s / counted) : 0.0f);
  else
    stf(out, tout, 0,
        divisor ? static_cast<float>(s / static_cast<double>(divisor)) : NAN);
}

static void finalMean(const CudaArgs &a, const double *parts, long long n,
                      long long divisor, const TensorView &out,
                      const long long *labels = nullptr, long long ignore = 0) {
  TCC_LAUNCH(finalMeanKernel, 1, 1024, a.stream)
  (parts, n, divisor, labels, ignore, out.data, dt(out));
  checkLaunch(a.instr.kernel.c_str());
}

int64_t prepare_softmax_cross_entropy(const Instr &in,
                                      const std::vector<TensorInfo> &tensors) {
  return tensors[in.inputs[1]].numElements() * sizeof(double);
}

/// parts[p] = -log_softmax(logits[p])[label[p]] =
/// log(sum(exp(x - max))) - (x[label] - max), the sum in double; with label
/// smoothing S, (1 - S) of it plus S * (log(sum) - (sum(x) / C - max)). A
/// row labelled `ignore` adds 0 (finalMean does not count it).
__global__ void __launch_bounds__(1024)
    crossEntropyRowsKernel(const void *x, int tx, const long long *labels,
                           double *parts, long long rows, long long classes,
                           long long ignore, double smoothing, long long *err) {
  __shared__ float sharedF[32];
  __shared__ double sharedD[32];
  __shared__ float sharedX[32];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    long long base = row * classes;
    float mx = -INFINITY;
    for (long long j = threadIdx.x; j < classes; j += blockDim.x)
      mx = fmaxf(mx, ldf(x, tx, base + j));
    mx = blockMax(mx, sharedF);
    double sum = 0.0;
    float sx = 0.0f;
    for (long long j = threadIdx.x; j < classes; j += blockDim.x) {
      float v = ldf(x, tx, base + j);
      sum += expf(v - mx);
      sx += v;
    }
    sum = blockSum(sum, sharedD);
    if (smoothing != 0.0)
      sx = blockSum(sx, sharedX);
    if (threadIdx.x == 0) {
      long long label = labels[row];
      if (label == ignore) {
        parts[row] = 0.0;
      } else if (label < 0 || label >= classes) {
        raiseError(err, row, label, classes);
        parts[row] = 0.0;
      } else {
        double nll = static_cast<double>(ldf(x, tx, base + label) - mx);
        parts[row] = smoothing == 0.0
                         ? log(sum) - nll
                         : log(sum) - (1.0 - smoothing) * nll -
                               smoothing * (static_cast<double>(sx) /
                                                static_cast<double>(classes) -
                                            static_cast<double>(mx));
      }
    }
  }
}

void launch_softmax_cross_entropy(const CudaArgs &a) {
  const abi::CrossEntropyAttrs at =
      abi::attrs<abi::KernelId::SoftmaxCrossEntropy>(a.instr);
  const TensorView &L = a.in[0], &Lab = a.in[1];
  long long classes = L.dim(L.rank() - 1), rows = Lab.numel;
  double *parts = static_cast<double *>(a.scratch);
  const long long *labels = static_cast<const long long *>(Lab.data);
  if (rows > 0) {
    TCC_LAUNCH(crossEntropyRowsKernel, rowGrid(rows),
               std::min(rowBlock(classes), 512), a.stream)
    (L.data, dt(L), labels, parts, rows, classes, at.ignoreIndex,
     at.labelSmoothing, a.err);
    checkLaunch(a.instr.kernel.c_str());
  }
  finalMean(a, parts, rows, rows, a.out[0], labels, at.ignoreIndex);
}

/// dlogits = softmax(logits) * dloss, less (1 - S) * dloss at the label and
/// S / C * dloss everywhere: dloss is the gradient per counted position
/// (the gradient rule divided by the count). Rows labelled `ignore` are 0.
__global__ void __launch_bounds__(1024)
    crossEntropyGradKernel(const void *dloss, int tdl, const void *x, int tx,
                           const long long *labels, void *dx, int tdx,
                           long long rows, long long classes, long long ignore,
                           double smoothing, long long *err) {
  __shared__ float sharedF[32];
  __shared__ double sharedD[32];
  const float scale = ldf(dloss, tdl, 0);
  const float hit = scale * static_cast<float>(1.0 - smoothing);
  const float smooth =
      scale * static_cast<float>(smoothing / static_cast<double>(classes));
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    long long base = row * classes;
    long long label = labels[row];
    if (label == ignore) {
      for (long long j = threadIdx.x; j < classes; j += blockDim.x)
        stf(dx, tdx, base + j, 0.0f);
      continue; // the same in every thread: no block-wide step is skipped
    }
    if (label < 0 || label >= classes) {
      if (threadIdx.x == 0)
        raiseError(err, row, label, classes);
      label = -1; // the row is still written, without the label term
    }
    float mx = -INFINITY;
    for (long long j = threadIdx.x; j < classes; j += blockDim.x)
      mx = fmaxf(mx, ldf(x, tx, base + j));
    mx = blockMax(mx, sharedF);
    double sum = 0.0;
    for (long long j = threadIdx.x; j < classes; j += blockDim.x)
      sum += expf(ldf(x, tx, base + j) - mx);
    sum = blockSum(sum, sharedD);
    const float inv = static_cast<float>(1.0 / sum);
    for (long long j = threadIdx.x; j < classes; j += blockDim.x) {
      float g = expf(ldf(x, tx, base + j) - mx) * inv * scale;
      if (smoothing != 0.0)
        g -= smooth;
      if (j == label)
        g -= hit;
      stf(dx, tdx, base + j, g);
    }
  }
}

void launch_softmax_cross_entropy_grad(const CudaArgs &a) {
  const abi::CrossEntropyAttrs at =
      abi::attrs<abi::KernelId::SoftmaxCrossEntropyGrad>(a.instr);
  const TensorView &L = a.in[1], &Lab = a.in[2];
  long long classes = L.dim(L.rank() - 1), rows = Lab.numel;
  if (rows == 0)
    return;
  TCC_LAUNCH(crossEntropyGradKernel, rowGrid(rows),
             std::min(rowBlock(classes), 512), a.stream)
  (a.in[0].data, dt(a.in[0]), L.data, dt(L),
   static_cast<const long long *>(Lab.data), a.out[0].data, dt(a.out[0]), rows,
   classes, at.ignoreIndex, at.labelSmoothing, a.err);
  checkLaunch(a.instr.kernel.c_str());
}

/// Blocks of the MSE partial sums (scratch: this many doubles).
static constexpr int kMseBlocks = 1024;

int64_t prepare_mse_loss(const Instr &, const std::vector<TensorInfo> &) {
  return kMseBlocks * sizeof(double);
}

__global__ void squaredErrorKernel(const void *p, int tp, const void *t, int tt,
                                   long long n, double *parts) {
  __shared__ double shared[32];
  double s = 0.0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    double d = static_cast<double>(ldf(p, tp, i)) - ldf(t, tt, i);
    s += d * d;
  }
  s = blockSum(s, shared);
  if (threadIdx.x == 0)
    parts[blockIdx.x] = s;
}

void launch_mse_loss(const CudaArgs &a) {
  const TensorView &P = a.in[0], &T = a.in[1];
  long long n = P.numel;
  double *parts = static_cast<double *>(a.scratch);
  unsigned blocks = std::min<unsigned>(gridFor(n, kBlock, a.smCount),
                                       static_cast<unsigned>(kMseBlocks));
  if (n > 0) {
    TCC_LAUNCH(squaredErrorKernel, blocks, kBlock, a.stream)
    (P.data, dt(P), T.data, dt(T), n, parts);
    checkLaunch(a.instr.kernel.c_str());
  }
  finalMean(a, parts, n > 0 ? blocks : 0, n, a.out[0]);
}

__global__ void mseGradKernel(const void *dloss, int tdl, const void *p, int tp,
                              const void *t, int tt, void *dp, int tdp,
                              long long n) {
  const float scale = 2.0f * ldf(dloss, tdl, 0) / static_cast<float>(n);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    stf(dp, tdp, i, scale * (ldf(p, tp, i) - ldf(t, tt, i)));
}

void launch_mse_loss_grad(const CudaArgs &a) {
  long long n = a.in[1].numel;
  if (n == 0)
    return;
  TCC_LAUNCH(mseGradKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, dt(a.in[0]), a.in[1].data, dt(a.in[1]), a.in[2].data,
   dt(a.in[2]), a.out[0].data, dt(a.out[0]), n);
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// layer_norm, layer_norm_grad
//===----------------------------------------------------------------------===//

/// x as [rows, n]: the dims before the axis are rows.
static void normView(const TensorView &x, int64_t axis, long long &rows,
                     long long &n) {
  rows = 1;
  n = 1;
  for (size_t d = 0; d < x.rank(); ++d)
    (static_cast<int64_t>(d) < axis ? rows : n) *= x.dim(d);
}

// Statistics in double, two passes, biased variance, eps inside the sqrt;
// y = (x - mean) * rstd * scale + bias in f32 (KernelsNorm.cpp).
__global__ void __launch_bounds__(1024)
    layerNormKernel(const void *x, int tx, const void *gamma, int tg,
                    const void *beta, int tb, void *y, int ty, void *mean,
                    int tm, void *rstd, int tr, long long rows, long long n,
                    double eps) {
  __shared__ double shared[32];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    long long base = row * n;
    double sum = 0.0;
    for (long long j = threadIdx.x; j < n; j += blockDim.x)
      sum += ldf(x, tx, base + j);
    const double mu = blockSum(sum, shared) / n;
    double sq = 0.0;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      double d = ldf(x, tx, base + j) - mu;
      sq += d * d;
    }
    sq = blockSum(sq, shared);
    const float m = static_cast<float>(mu);
    const float rs = static_cast<float>(1.0 / sqrt(sq / n + eps));
    if (threadIdx.x == 0) {
      stf(mean, tm, row, m);
      stf(rstd, tr, row, rs);
    }
    for (long long j = threadIdx.x; j < n; j += blockDim.x)
      stf(y, ty, base + j,
          (ldf(x, tx, base + j) - m) * rs * ldf(gamma, tg, j) +
              ldf(beta, tb, j));
  }
}

void launch_layer_norm(const CudaArgs &a) {
  const TensorView &X = a.in[0];
  const abi::LayerNormAttrs at = abi::attrs<abi::KernelId::LayerNorm>(a.instr);
  long long rows, n;
  normView(X, at.axis, rows, n);
  if (rows == 0 || n == 0)
    return;
  TCC_LAUNCH(layerNormKernel, rowGrid(rows), std::min(rowBlock(n), 512),
             a.stream)
  (X.data, dt(X), a.in[1].data, dt(a.in[1]), a.in[2].data, dt(a.in[2]),
   a.out[0].data, dt(a.out[0]), a.out[1].data, dt(a.out[1]), a.out[2].data,
   dt(a.out[2]), rows, n, at.eps);
  checkLaunch(a.instr.kernel.c_str());
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * scale,
// xhat = (x - mean) * rstd; per row, the two means from double sums.
__global__ void __launch_bounds__(1024)
    layerNormGradRowsKernel(const void *dy, int tdy, const void *x, int tx,
                            const void *gamma, int tg, const void *mean, int tm,
                            const void *rstd, int tr, void *dx, int tdx,
                            long long rows, long long n) {
  __shared__ double shared[32];
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    long long base = row * n;
    const float m = ldf(mean, tm, row), rs = ldf(rstd, tr, row);
    double sumG = 0.0, sumGX = 0.0;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      float xhat = (ldf(x, tx, base + j) - m) * rs;
      float g = ldf(dy, tdy, base + j) * ldf(gamma, tg, j);
      sumG += g;
      sumGX += static_cast<double>(g) * xhat;
    }
    sumG = blockSum(sumG, shared);
    sumGX = blockSum(sumGX, shared);
    const float meanG = static_cast<float>(sumG / n);
    const float meanGX = static_cast<float>(sumGX / n);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      float xhat = (ldf(x, tx, base + j) - m) * rs;
      stf(dx, tdx, base + j,
          rs * (ldf(dy, tdy, base + j) * ldf(gamma, tg, j) - meanG -
                xhat * meanGX));
    }
  }
}

/// Row slices of the parameter gradients: blockIdx.y sums rows
/// [y * chunk, (y + 1) * chunk) of columns blockIdx.x * 32 + threadIdx.x,
/// threadIdx.y striding the rows; partials in double go to
/// parts[(y * 2 + {0: scale, 1: bias}) * n + column].
__global__ void layerNormParamGradKernel(const void *dy, int tdy, const void *x,
                                         int tx, const void *mean, int tm,
                                         const void *rstd, int tr,
                                         double *parts, long long rows,
                                         long long n, long long chunk) {
  __shared__ double sg[8][33], sb[8][33];
  long long col = blockIdx.x * 32LL + threadIdx.x;
  long long r0 = blockIdx.y * chunk;
  long long r1 = r0 + chunk < rows ? r0 + chunk : rows;
  // Four rows at a time (blockDim.y apart), each into its own sums: four
  // times the loads in flight of a row at a time, which left the memory
  // mostly idle. The sums are added in a fixed order, so results stay
  // reproducible.
  double g4[4] = {0.0, 0.0, 0.0, 0.0}, b4[4] = {0.0, 0.0, 0.0, 0.0};
  if (col < n) {
    const long long step = blockDim.y;
    long long r = r0 + threadIdx.y;
    for (; r + 3 * step < r1; r += 4 * step) {
      float d[4], xv[4], mv[4], sv[4];
      TCC_UNROLL
      for (int u = 0; u < 4; ++u) {
        long long ru = r + u * step;
        d[u] = ldf(dy, tdy, ru * n + col);
        xv[u] = ldf(x, tx, ru * n + col);
        mv[u] = ldf(mean, tm, ru);
        sv[u] = ldf(rstd, tr, ru);
      }
      TCC_UNROLL
      for (int u = 0; u < 4; ++u) {
        g4[u] += static_cast<double>(d[u]) * ((xv[u] - mv[u]) * sv[u]);
        b4[u] += d[u];
      }
    }
    for (; r < r1; r += step) {
      float d = ldf(dy, tdy, r * n + col);
      float xhat =
          (ldf(x, tx, r * n + col) - ldf(mean, tm, r)) * ldf(rstd, tr, r);
      g4[0] += static_cast<double>(d) * xhat;
      b4[0] += d;
    }
  }
  double accG = (g4[0] + g4[1]) + (g4[2] + g4[3]);
  double accB = (b4[0] + b4[1]) + (b4[2] + b4[3]);
  sg[threadIdx.y][threadIdx.x] = accG;
  sb[threadIdx.y][threadIdx.x] = accB;
  __syncthreads();
  if (threadIdx.y == 0 && col < n) {
    double g = 0.0, b = 0.0;
    for (int i = 0; i < 8; ++i) {
      g += sg[i][threadIdx.x];
      b += sb[i][threadIdx.x];
    }
    parts[(blockIdx.y * 2LL) * n + col] = g;
    parts[(blockIdx.y * 2LL + 1) * n + col] = b;
  }
}

/// The same sums with 16-bit dy and x (dtypes TDy, TX) read 16 bytes (8
/// columns) a thread (n % 8 == 0, both 16-byte aligned) and f32 mean and
/// rstd (as the layer norms write them): a warp reads 512
/// contiguous bytes of a row where layerNormParamGradKernel's read 64, each
/// load with its dtype switch. Block (32, 8): 32 x 8 columns, rows
/// r0 + threadIdx.y, step 8, four rows in flight; the 8 row lanes then add
/// in order.
///
/// A column's four rows of a step add in float, in a fixed order, then
/// once to its double sums: conversions to double run at a quarter of the
/// float rate or less, and at two a column a row (dy and dy xhat, each
/// widened, multiplied and added in double) they and the dtype switches
/// kept a thread's next loads waiting. The float sum of four adds at most 3 ulp
/// (2^-22) to a step's part of a sum.
template <int TDy, int TX>
__global__ void __launch_bounds__(256)
    layerNormParamGradVecKernel(const unsigned short *dy,
                                const unsigned short *x, const float *mean,
                                const float *rstd, double *parts,
                                long long rows, long long n, long long chunk) {
  __shared__ double sg[8][257], sb[8][257];
  long long c0 = (blockIdx.x * 32LL + threadIdx.x) * 8;
  long long r0 = blockIdx.y * chunk;
  long long r1 = r0 + chunk < rows ? r0 + chunk : rows;
  double g[8], b[8];
  TCC_UNROLL
  for (int e = 0; e < 8; ++e)
    g[e] = b[e] = 0.0;
  if (c0 < n) {
    long long r = r0 + threadIdx.y;
    for (; r + 24 < r1; r += 32) {
      uint4 dw[4], xw[4];
      float m[4], rs[4];
      TCC_UNROLL
      for (int u = 0; u < 4; ++u) {
        dw[u] = *reinterpret_cast<const uint4 *>(dy + (r + 8 * u) * n + c0);
        xw[u] = *reinterpret_cast<const uint4 *>(x + (r + 8 * u) * n + c0);
        m[u] = mean[r + 8 * u];
        rs[u] = rstd[r + 8 * u];
      }
      TCC_UNROLL
      for (int e = 0; e < 8; ++e) {
        float d[4], p[4];
        TCC_UNROLL
        for (int u = 0; u < 4; ++u) {
          d[u] = halfOf(dw[u], e, TDy);
          p[u] = d[u] * ((halfOf(xw[u], e, TX) - m[u]) * rs[u]);
        }
        g[e] += static_cast<double>((p[0] + p[1]) + (p[2] + p[3]));
        b[e] += static_cast<double>((d[0] + d[1]) + (d[2] + d[3]));
      }
    }
    for (; r < r1; r += 8) {
      const uint4 dw = *reinterpret_cast<const uint4 *>(dy + r * n + c0);
      const uint4 xw = *reinterpret_cast<const uint4 *>(x + r * n + c0);
      const float m = mean[r], rs = rstd[r];
      TCC_UNROLL
      for (int e = 0; e < 8; ++e) {
        float d = halfOf(dw, e, TDy);
        g[e] += static_cast<double>(d * ((halfOf(xw, e, TX) - m) * rs));
        b[e] += static_cast<double>(d);
      }
    }
  }
  TCC_UNROLL
  for (int e = 0; e < 8; ++e) {
    sg[threadIdx.y][threadIdx.x * 8 + e] = g[e];
    sb[threadIdx.y][threadIdx.x * 8 + e] = b[e];
  }
  __syncthreads();
  // Thread (x, y) finishes columns y * 32 + x of the block's 256.
  int c = threadIdx.y * 32 + threadIdx.x;
  long long col = blockIdx.x * 256LL + c;
  if (col < n) {
    double gs = 0.0, bs = 0.0;
    for (int i = 0; i < 8; ++i) {
      gs += sg[i][c];
      bs += sb[i][c];
    }
    parts[(blockIdx.y * 2LL) * n + col] = gs;
    parts[(blockIdx.y * 2LL + 1) * n + col] = bs;
  }
}

/// A slice's parts are its n dgamma sums, then its n dbeta sums: the 2n
/// columns of sliceSum. Block (32, 8), ceil(2n / 32) blocks.
__global__ void __launch_bounds__(256)
    layerNormParamFinalKernel(const double *parts, int slices, void *dgamma,
                              int tg, void *dbeta, int tb, long long n) {
  __shared__ double lanes[8][33];
  double v = sliceSum(parts, slices, 2 * n, 2 * n, lanes);
  long long j = blockIdx.x * 32LL + threadIdx.x;
  if (threadIdx.y == 0 && j < 2 * n) {
    if (j < n)
      stf(dgamma, tg, j, static_cast<float>(v));
    else
      stf(dbeta, tb, j - n, static_cast<float>(v));
  }
}

/// Row slices of the parameter gradients: enough to fill the GPU when rows
/// are many and columns few (GPT-2's 768 columns are 3 blocks of the
/// vectorized kernel a slice), fixed by the shape (so results are too).
static int paramSlices(long long rows) {
  long long s = (rows + 255) / 256;
  return static_cast<int>(s < 1 ? 1 : s > 128 ? 128 : s);
}

int64_t prepare_layer_norm_grad(const Instr &in,
                                const std::vector<TensorInfo> &tensors) {
  const TensorInfo &x = tensors[in.inputs[1]];
  // layer_norm_grad and layer_norm_param_grad share AxisAttrs.
  int64_t axis = abi::attrsOf<abi::AxisAttrs>(in).axis;
  long long rows = 1, n = 1;
  for (size_t d = 0; d < x.shape.size(); ++d)
    (static_cast<int64_t>(d) < axis ? rows : n) *= x.shape[d];
  return paramSlices(rows) * 2 * n * static_cast<int64_t>(sizeof(double));
}

/// dscale and dbias into `dgamma` and `dbeta` from dy, x, mean and rstd:
/// row slices into the scratch, then their sums in slice order.
static void launchParamGrad(const CudaArgs &a, const TensorView &dy,
                            const TensorView &x, const TensorView &mean,
                            const TensorView &rstd, const TensorView &dgamma,
                            const TensorView &dbeta, long long rows,
                            long long n, const char *what) {
  int slices = paramSlices(rows);
  long long chunk = (rows + slices - 1) / slices;
  double *parts = static_cast<double *>(a.scratch);
  if (isHalfDType(dy.dtype) && isHalfDType(x.dtype) &&
      mean.dtype == DType::F32 && rstd.dtype == DType::F32 && n % 8 == 0 &&
      aligned16(dy.data) && aligned16(x.data)) {
    dim3 grid(static_cast<unsigned>((n / 8 + 31) / 32), slices);
    auto launch = [&](auto kernel) {
      TCC_LAUNCH(kernel, grid, dim3(32, 8), a.stream)
      (static_cast<const unsigned short *>(dy.data),
       static_cast<const unsigned short *>(x.data),
       static_cast<const float *>(mean.data),
       static_cast<const float *>(rstd.data), parts, rows, n, chunk);
    };
    bool dyBf16 = dt(dy) == kDtBF16, xBf16 = dt(x) == kDtBF16;
    if (dyBf16 && xBf16)
      launch(layerNormParamGradVecKernel<kDtBF16, kDtBF16>);
    else if (dyBf16)
      launch(layerNormParamGradVecKernel<kDtBF16, kDtF16>);
    else if (xBf16)
      launch(layerNormParamGradVecKernel<kDtF16, kDtBF16>);
    else
      launch(layerNormParamGradVecKernel<kDtF16, kDtF16>);
  } else {
    dim3 grid(static_cast<unsigned>((n + 31) / 32), slices);
    TCC_LAUNCH(layerNormParamGradKernel, grid, dim3(32, 8), a.stream)
    (dy.data, dt(dy), x.data, dt(x), mean.data, dt(mean), rstd.data, dt(rstd),
     parts, rows, n, chunk);
  }
  checkLaunch(what);
  TCC_LAUNCH(layerNormParamFinalKernel,
             static_cast<unsigned>((2 * n + 31) / 32), dim3(32, 8), a.stream)
  (parts, slices, dgamma.data, dt(dgamma), dbeta.data, dt(dbeta), n);
  checkLaunch(what);
}

void launch_layer_norm_grad(const CudaArgs &a) {
  const TensorView &DY = a.in[0], &X = a.in[1];
  long long rows, n;
  normView(X, abi::attrs<abi::KernelId::LayerNormGrad>(a.instr).axis, rows, n);
  if (n == 0)
    return;
  if (rows > 0) {
    TCC_LAUNCH(layerNormGradRowsKernel, rowGrid(rows),
               std::min(rowBlock(n), 512), a.stream)
    (DY.data, dt(DY), X.data, dt(X), a.in[2].data, dt(a.in[2]), a.in[3].data,
     dt(a.in[3]), a.in[4].data, dt(a.in[4]), a.out[0].data, dt(a.out[0]), rows,
     n);
    checkLaunch(a.instr.kernel.c_str());
  }
  launchParamGrad(a, DY, X, a.in[3], a.in[4], a.out[1], a.out[2], rows, n,
                  a.instr.kernel.c_str());
}

void launch_layer_norm_param_grad(const CudaArgs &a) {
  long long rows, n;
  normView(a.in[1], abi::attrs<abi::KernelId::LayerNormParamGrad>(a.instr).axis,
           rows, n);
  if (n == 0)
    return;
  launchParamGrad(a, a.in[0], a.in[1], a.in[2], a.in[3], a.out[0], a.out[1],
                  rows, n, a.instr.kernel.c_str());
}

} // namespace tcc::rt::cuda

//===- CudaLinearCrossEntropy.cu - Cut cross-entropy on the GPU -----------===//
//
// linear_cross_entropy and its gradient: the port of the CPU kernels
// (runtime/cpu/KernelsLinearCrossEntropy.cpp). Per slice of `block`
// vocabulary columns, one cuBLASLt GEMM (CudaGemm) writes the [N, block]
// logits into device scratch and a block-per-row kernel folds them into each
// row's online log-sum-exp (running max, double sum of exponentials, label
// logit, logit sum for label smoothing). The gradient recomputes a slice,
// turns it into dlogits in place (one thread per element) and runs two
// GEMMs: dhidden's share (into dhidden for the first slice, into scratch
// added by a small kernel after) and the weight gradient's slice, written
// in place through the leading dimension; the bias gradient's slice is the
// column sums, in double, in row order. Everything is in stream order and
// reductions have a fixed order, so a run repeats bit for bit.
//
// The GEMMs go through attentionGemm (CudaGemm::gemm on the GPU; the
// emulator tests' host GEMM, so the conformance cases run these kernels on
// a machine without a GPU).
//
// Scratch (prepare_*): the logits slice, then per row m (f32), s (f64),
// label logit (f32), logit sum (f64) for the forward; the slice and an
// [N, D] partial dhidden for the backward.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAttention.h"
#include "runtime/cuda/CudaGemm.h"
#include "runtime/cuda/CudaKernelsCommon.cuh"

#include <algorithm>

namespace tcc::rt::cuda {

namespace {
/// The problem both kernels solve, from the instr and its tensors.
struct HeadDims {
  long long rows, features, classes, block;
  bool transposed;
};
} // namespace

static HeadDims headDims(const Instr &in, const std::vector<int64_t> &hidden,
                         const std::vector<int64_t> &weight) {
  const abi::LinearCrossEntropyAttrs at =
      abi::attrs<abi::KernelId::LinearCrossEntropy>(in);
  HeadDims d{};
  d.features = hidden.back();
  d.rows = 1;
  for (size_t i = 0; i + 1 < hidden.size(); ++i)
    d.rows *= hidden[i];
  d.transposed = at.transposeWeight;
  d.classes = weight[at.transposeWeight ? 0 : 1];
  d.block = std::min<long long>(std::max<long long>(at.block, 1), d.classes);
  return d;
}

static size_t align256(size_t n) { return (n + 255) / 256 * 256; }

int64_t prepare_linear_cross_entropy(const Instr &in,
                                     const std::vector<TensorInfo> &t) {
  HeadDims d = headDims(in, t[in.inputs[0]].shape, t[in.inputs[1]].shape);
  return static_cast<int64_t>(align256(d.rows * d.block * sizeof(float)) +
                              d.rows *
                                  (2 * sizeof(float) + 3 * sizeof(double)));
}

int64_t prepare_linear_cross_entropy_grad(const Instr &in,
                                          const std::vector<TensorInfo> &t) {
  HeadDims d = headDims(in, t[in.inputs[1]].shape, t[in.inputs[2]].shape);
  return static_cast<int64_t>(align256(d.rows * d.block * sizeof(float)) +
                              d.rows * d.features * sizeof(float));
}

/// logits[:, v0:v0+n] of hidden op(W) into `out` ([rows, n], packed).
static void sliceGemm(const AttentionGemm &gemm, const HeadDims &d,
                      const void *hidden, const float *w, long long v0,
                      long long n, float *out) {
  CudaGemm::Problem p;
  p.m = d.rows;
  p.n = n;
  p.k = d.features;
  p.transB = d.transposed;
  p.ldb = d.transposed ? d.features : d.classes;
  gemm(p, hidden, d.transposed ? w + v0 * d.features : w + v0, out);
}

/// Folds one slice into each row's online log-sum-exp; one block per row.
__global__ void __launch_bounds__(1024)
    lceForwardRows(const float *logits, long long rows, long long n,
                   long long v0, const float *bias, const long long *labels,
                   float *mx, double *sum, float *hit, double *rowSum,
                   bool smoothing) {
  __shared__ float sharedF[32];
  __shared__ double sharedD[32];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *row = logits + r * n;
    float m = -INFINITY;
    for (long long j = threadIdx.x; j < n; j += blockDim.x)
      m = fmaxf(m, row[j] + (bias ? bias[v0 + j] : 0.0f));
    m = fmaxf(blockMax(m, sharedF), mx[r]);
    double s = 0.0, sx = 0.0;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      float x = row[j] + (bias ? bias[v0 + j] : 0.0f);
      s += expf(x - m);
      sx += x;
    }
    s = blockSum(s, sharedD);
    if (smoothing)
      sx = blockSum(sx, sharedD);
    if (threadIdx.x == 0) {
      float old = mx[r];
      sum[r] = (old == -INFINITY ? 0.0 : sum[r] * exp(double(old) - m)) + s;
      mx[r] = m;
      rowSum[r] += sx;
      long long label = labels[r];
      if (label >= v0 && label < v0 + n)
        hit[r] = row[label - v0] + (bias ? bias[label] : 0.0f);
    }
  }
}

__global__ void lceZero(float *p, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    p[i] = 0.0f;
}

static void zero(const CudaArgs &a, void *p, long long n) {
  TCC_LAUNCH(lceZero, gridFor(n, 256, a.smCount), 256, a.stream)
  (static_cast<float *>(p), n);
  checkLaunch(a.instr.kernel.c_str());
}

__global__ void lceInitRows(long long rows, float *mx, double *sum, float *hit,
                            double *rowSum) {
  for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows;
       r += (long long)gridDim.x * blockDim.x) {
    mx[r] = -INFINITY;
    sum[r] = 0.0;
    hit[r] = 0.0f;
    rowSum[r] = 0.0;
  }
}

/// lse per row, and the mean loss over counted rows in one block (fixed
/// order); labels outside [0, classes) that are not `ignore` raise an error.
__global__ void __launch_bounds__(1024)
    lceFinish(long long rows, long long classes, const long long *labels,
              long long ignore, double smoothing, const float *mx,
              const double *sum, const float *hit, const double *rowSum,
              float *lse, float *loss, long long *err) {
  __shared__ double sharedD[32];
  double total = 0.0, count = 0.0;
  for (long long r = threadIdx.x; r < rows; r += blockDim.x) {
    double l = double(mx[r]) + log(sum[r]);
    lse[r] = static_cast<float>(l);
    long long label = labels[r];
    if (label == ignore)
      continue;
    if (label < 0 || label >= classes) {
      raiseError(err, r, label, classes);
      continue;
    }
    total += l - (1.0 - smoothing) * hit[r] -
             smoothing * rowSum[r] / static_cast<double>(classes);
    count += 1.0;
  }
  total = blockSum(total, sharedD);
  count = blockSum(count, sharedD);
  if (threadIdx.x == 0)
    *loss = count > 0 ? static_cast<float>(total / count) : 0.0f;
}

void launch_linear_cross_entropy(const CudaArgs &a) {
  const abi::LinearCrossEntropyAttrs at =
      abi::attrs<abi::KernelId::LinearCrossEntropy>(a.instr);
  HeadDims d = headDims(a.instr, *a.in[0].shape, *a.in[1].shape);
  const float *w = static_cast<const float *>(a.in[1].data);
  const long long *labels = static_cast<const long long *>(a.in[2].data);
  const float *bias =
      a.in.size() > 3 ? static_cast<const float *>(a.in[3].data) : nullptr;
  char *base = static_cast<char *>(a.scratch);
  float *logits = reinterpret_cast<float *>(base);
  base += align256(d.rows * d.block * sizeof(float));
  double *sum = reinterpret_cast<double *>(base);
  double *rowSum = sum + d.rows;
  float *mx = reinterpret_cast<float *>(rowSum + d.rows);
  float *hit = mx + d.rows;
  if (d.rows == 0) {
    zero(a, a.out[0].data, 1);
    return;
  }
  AttentionGemm gemm = attentionGemm(a);
  TCC_LAUNCH(lceInitRows, gridFor(d.rows, 256, a.smCount), 256, a.stream)
  (d.rows, mx, sum, hit, rowSum);
  checkLaunch(a.instr.kernel.c_str());
  for (long long v0 = 0; v0 < d.classes; v0 += d.block) {
    long long n = std::min(d.block, d.classes - v0);
    sliceGemm(gemm, d, a.in[0].data, w, v0, n, logits);
    TCC_LAUNCH(lceForwardRows, rowGrid(d.rows), std::min(rowBlock(n), 512),
               a.stream)
    (logits, d.rows, n, v0, bias, labels, mx, sum, hit, rowSum,
     at.labelSmoothing != 0.0);
    checkLaunch(a.instr.kernel.c_str());
  }
  TCC_LAUNCH(lceFinish, 1, 1024, a.stream)
  (d.rows, d.classes, labels, at.ignoreIndex, at.labelSmoothing, mx, sum, hit,
   rowSum, static_cast<float *>(a.out[1].data),
   static_cast<float *>(a.out[0].data), a.err);
  checkLaunch(a.instr.kernel.c_str());
}

/// dlogits of one slice in place: g * (exp(x - lse) - S / V) less
/// g * (1 - S) at the label; 0 on ignored rows.
__global__ void lceGradSlice(float *logits, long long rows, long long n,
                             long long v0, const float *bias,
                             const long long *labels, long long ignore,
                             const float *lse, const float *grad,
                             double smoothing, long long classes) {
  const float g = *grad;
  const float hitScale = g * static_cast<float>(1.0 - smoothing);
  const float smooth =
      g * static_cast<float>(smoothing / static_cast<double>(classes));
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       i < rows * n; i += (long long)gridDim.x * blockDim.x) {
    long long r = i / n, j = i % n;
    long long label = labels[r];
    if (label == ignore) {
      logits[i] = 0.0f;
      continue;
    }
    float x = logits[i] + (bias ? bias[v0 + j] : 0.0f);
    float v = expf(x - lse[r]) * g - smooth;
    if (label == v0 + j)
      v -= hitScale;
    logits[i] = v;
  }
}

__global__ void lceAddInto(float *dst, const float *src, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    dst[i] += src[i];
}

/// dbias[v0 + j] = sum over rows of dlogits[:, j], in double, in row order.
__global__ void lceColumnSums(const float *dl, long long rows, long long n,
                              float *dbias) {
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < n;
       j += (long long)gridDim.x * blockDim.x) {
    double s = 0.0;
    for (long long r = 0; r < rows; ++r)
      s += dl[r * n + j];
    dbias[j] = static_cast<float>(s);
  }
}

void launch_linear_cross_entropy_grad(const CudaArgs &a) {
  const abi::LinearCrossEntropyAttrs at =
      abi::attrs<abi::KernelId::LinearCrossEntropyGrad>(a.instr);
  HeadDims d = headDims(a.instr, *a.in[1].shape, *a.in[2].shape);
  const float *grad = static_cast<const float *>(a.in[0].data);
  const void *hidden = a.in[1].data;
  const float *w = static_cast<const float *>(a.in[2].data);
  const long long *labels = static_cast<const long long *>(a.in[3].data);
  const float *lse = static_cast<const float *>(a.in[4].data);
  const float *bias =
      a.in.size() > 5 ? static_cast<const float *>(a.in[5].data) : nullptr;
  float *dh = static_cast<float *>(a.out[0].data);
  float *dw = static_cast<float *>(a.out[1].data);
  float *db = a.out.size() > 2 ? static_cast<float *>(a.out[2].data) : nullptr;
  char *base = static_cast<char *>(a.scratch);
  float *dl = reinterpret_cast<float *>(base);
  float *part =
      reinterpret_cast<float *>(base + align256(d.rows * d.block * 4));
  if (d.rows == 0) {
    zero(a, dw, a.out[1].numel);
    if (db)
      zero(a, db, a.out[2].numel);
    return;
  }
  AttentionGemm gemm = attentionGemm(a);
  for (long long v0 = 0; v0 < d.classes; v0 += d.block) {
    long long n = std::min(d.block, d.classes - v0);
    sliceGemm(gemm, d, hidden, w, v0, n, dl);
    TCC_LAUNCH(lceGradSlice, gridFor(d.rows * n, 256, a.smCount), 256, a.stream)
    (dl, d.rows, n, v0, bias, labels, at.ignoreIndex, lse, grad,
     at.labelSmoothing, d.classes);
    checkLaunch(a.instr.kernel.c_str());
    // dhidden (+)= dl op(W_slice)^T: W_slice is [n, D] (transposed) or the
    // [D, n] columns of [D, V].
    CudaGemm::Problem ph;
    ph.m = d.rows;
    ph.n = d.features;
    ph.k = n;
    ph.transB = !d.transposed;
    ph.ldb = d.transposed ? d.features : d.classes;
    float *target = v0 == 0 ? dh : part;
    gemm(ph, dl, d.transposed ? w + v0 * d.features : w + v0, target);
    if (v0 != 0) {
      TCC_LAUNCH(lceAddInto, gridFor(d.rows * d.features, 256, a.smCount), 256,
                 a.stream)
      (dh, part, d.rows * d.features);
      checkLaunch(a.instr.kernel.c_str());
    }
    // The weight gradient's slice: dl^T hidden ([n, D] rows of a [V, D]
    // gradient) or hidden^T dl ([D, n] columns of a [D, V] one).
    CudaGemm::Problem pw;
    pw.transA = true;
    if (d.transposed) {
      pw.m = n;
      pw.n = d.features;
      pw.k = d.rows;
      gemm(pw, dl, hidden, dw + v0 * d.features);
    } else {
      pw.m = d.features;
      pw.n = n;
      pw.k = d.rows;
      pw.ldc = d.classes;
      gemm(pw, hidden, dl, dw + v0);
    }
    if (db) {
      TCC_LAUNCH(lceColumnSums, gridFor(n, 256, a.smCount), 256, a.stream)
      (dl, d.rows, n, db + v0);
      checkLaunch(a.instr.kernel.c_str());
    }
  }
}

} // namespace tcc::rt::cuda

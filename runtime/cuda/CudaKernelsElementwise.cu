//===- CudaKernelsElementwise.cu - Element-wise math, where, cast, dropout ===//
//
// Ports of KernelsElementwise.cpp, KernelsMath.cpp and parts of
// KernelsShape.cpp, formula for formula (same order of f32 operations; the
// library is built without FMA contraction, so only the math functions'
// last bits - expf, erff, tanhf, powf - differ from glibc's); sigmoid and
// GELU are runtime/core/prelude/Activations.h's, as on the CPU. Every thread
// reads element i of its inputs before writing element i of its outputs,
// so in-place calls (an output aliasing a same-sized input) are safe.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/prelude/Activations.h"
#include "runtime/core/prelude/UnaryFn.h"
#include "runtime/cuda/CudaKernelsCommon.cuh"

#include <cmath>

namespace tcc::rt::cuda {

namespace {
enum UnaryOp {
  kNeg,
  kRelu,
  kExp,
  kLog,
  kSqrt,
  kTanh,
  kSigmoid,
  kErf,
  kGeluErf,
  kGeluTanh,
  kPowScalar
};
enum GradOp {
  kReluGrad,
  kSqrtGrad,
  kTanhGrad,
  kSigmoidGrad,
  kErfGrad,
  kGeluErfGrad,
  kGeluTanhGrad,
  kPowScalarGrad
};
enum BinaryOp { kAdd, kSub, kMul, kDiv, kPow };
} // namespace

// 2 / sqrt(pi), as the CPU's erf_grad computes it in double.
constexpr float kTwoOverSqrtPi = static_cast<float>(1.12837916709551257390);

/// x^e with PyTorch's special cases (KernelsMath.cpp powScalar).
__device__ __forceinline__ float powScalar(float x, float e) {
  if (e == 2.0f)
    return x * x;
  if (e == 3.0f)
    return x * x * x;
  if (e == 0.5f)
    return sqrtf(x);
  if (e == -0.5f)
    return 1.0f / sqrtf(x);
  if (e == -1.0f)
    return 1.0f / x;
  if (e == -2.0f)
    return 1.0f / (x * x);
  return powf(x, e);
}

__device__ __forceinline__ float applyUnary(int op, float x, float e) {
  switch (op) {
  case kNeg:
    return -x;
  case kRelu:
    return x > 0.0f ? x : 0.0f;
  case kExp:
    return expf(x);
  case kLog:
    return logf(x);
  case kSqrt:
    return sqrtf(x);
  case kTanh:
    return tanhf(x);
  case kSigmoid:
    return tcc_sigmoid_t<tcc_libm_math>(x);
  case kErf:
    return erff(x);
  case kGeluErf:
    return tcc_gelu_erf_t<tcc_libm_math>(x);
  case kGeluTanh:
    return tcc_gelu_tanh_t<tcc_libm_math>(x);
  default:
    return powScalar(x, e);
  }
}

__device__ __forceinline__ float applyGrad(int op, float dy, float v, float e,
                                           float em1) {
  switch (op) {
  case kReluGrad:
    return v > 0.0f ? dy : 0.0f;
  case kSqrtGrad:
    return dy / (2.0f * v);
  case kTanhGrad:
    return dy * (1.0f - v * v);
  case kSigmoidGrad:
    return dy * (1.0f - v) * v;
  case kErfGrad:
    return kTwoOverSqrtPi * expf(-(v * v)) * dy;
  case kGeluErfGrad:
    return tcc_gelu_erf_grad_t<tcc_libm_math>(dy, v);
  case kGeluTanhGrad:
    return tcc_gelu_tanh_grad_t<tcc_libm_math>(dy, v);
  default: // pow_scalar_grad
    if (e == 0.0f)
      return 0.0f;
    if (e == 2.0f)
      return dy * (2.0f * v);
    return dy * (e * powScalar(v, em1));
  }
}

__device__ __forceinline__ float applyBinary(int op, float a, float b) {
  switch (op) {
  case kAdd:
    return a + b;
  case kSub:
    return a - b;
  case kMul:
    return a * b;
  case kDiv:
    return a / b;
  default:
    return powf(a, b);
  }
}

__global__ void unaryKernel(const void *x, int tx, void *y, int ty, long long n,
                            int op, float e) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    stf(y, ty, i, applyUnary(op, ldf(x, tx, i), e));
}

__global__ void gradKernel(const void *dy, int tdy, const void *v, int tv,
                           void *dx, int tdx, long long n, int op, float e,
                           float em1) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    stf(dx, tdx, i, applyGrad(op, ldf(dy, tdy, i), ldf(v, tv, i), e, em1));
}

/// strided: operand offsets from `s`; else flat with stride 1 (sa/sb = 1)
/// or 0 (a broadcast scalar).
__global__ void binaryKernel(const void *a, int ta, const void *b, int tb,
                             void *c, int tc, long long n, int op, bool strided,
                             long long sa, long long sb, Strided<3> s) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    long long ia = i * sa, ib = i * sb, ic = i;
    if (strided) {
      long long off[3];
      s.offsets(i, off);
      ic = off[0];
      ia = off[1];
      ib = off[2];
    }
    stf(c, tc, ic, applyBinary(op, ldf(a, ta, ia), ldf(b, tb, ib)));
  }
}

unsigned gridFor(int64_t n, int block, int smCount) {
  int64_t g = (n + block - 1) / block;
  int64_t cap = static_cast<int64_t>(smCount) * 32;
  if (g > cap)
    g = cap;
  return static_cast<unsigned>(g < 1 ? 1 : g);
}

static constexpr int kBlock = 256;

using K = abi::KernelId;

/// The kernel a checked instr calls (its name is one of KernelList.def).
static K kernelOf(const Instr &in) { return *abi::kernelByName(in.kernel); }

void launch_unary(const CudaArgs &a) {
  const Instr &in = a.instr;
  int op = kPowScalar;
  float e = 0.0f;
  switch (kernelOf(in)) {
  case K::Neg:
    op = kNeg;
    break;
  case K::Relu:
    op = kRelu;
    break;
  case K::Exp:
    op = kExp;
    break;
  case K::Log:
    op = kLog;
    break;
  case K::Sqrt:
    op = kSqrt;
    break;
  case K::Tanh:
    op = kTanh;
    break;
  case K::Sigmoid:
    op = kSigmoid;
    break;
  case K::Erf:
    op = kErf;
    break;
  case K::Gelu:
    op = abi::attrs<K::Gelu>(in).tanh ? kGeluTanh : kGeluErf;
    break;
  default: // pow_scalar
    e = static_cast<float>(abi::attrs<K::PowScalar>(in).exponent);
    break;
  }
  int64_t n = a.out[0].numel;
  if (n == 0)
    return;
  TCC_LAUNCH(unaryKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, dt(a.in[0]), a.out[0].data, dt(a.out[0]), n, op, e);
  checkLaunch(in.kernel.c_str());
}

void launch_unary_grad(const CudaArgs &a) {
  const Instr &in = a.instr;
  int op = kPowScalarGrad;
  float e = 0.0f, em1 = 0.0f;
  switch (kernelOf(in)) {
  case K::ReluGrad:
    op = kReluGrad;
    break;
  case K::SqrtGrad:
    op = kSqrtGrad;
    break;
  case K::TanhGrad:
    op = kTanhGrad;
    break;
  case K::SigmoidGrad:
    op = kSigmoidGrad;
    break;
  case K::ErfGrad:
    op = kErfGrad;
    break;
  case K::GeluGrad:
    op = abi::attrs<K::GeluGrad>(in).tanh ? kGeluTanhGrad : kGeluErfGrad;
    break;
  default: { // pow_scalar_grad
    double exponent = abi::attrs<K::PowScalarGrad>(in).exponent;
    e = static_cast<float>(exponent);
    em1 = static_cast<float>(exponent - 1.0);
    break;
  }
  }
  int64_t n = a.out[0].numel;
  if (n == 0)
    return;
  TCC_LAUNCH(gradKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, dt(a.in[0]), a.in[1].data, dt(a.in[1]), a.out[0].data,
   dt(a.out[0]), n, op, e, em1);
  checkLaunch(in.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// The unary function family: UnaryFn.h's formulas, as on the CPU
//===----------------------------------------------------------------------===//

// `fn` is the same for every thread, so the switch does not diverge.
__global__ void unaryFnKernel(const void *x, int tx, void *y, int ty,
                              long long n, int fn, float alpha, float beta) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    stf(y, ty, i, tcc_unary_fn(fn, ldf(x, tx, i), alpha, beta));
}

__global__ void unaryFnGradKernel(const void *dy, int tdy, const void *x,
                                  int tx, void *dx, int tdx, long long n,
                                  int fn, float alpha, float beta) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    stf(dx, tdx, i,
        tcc_unary_fn_grad(fn, ldf(dy, tdy, i), ldf(x, tx, i), alpha, beta));
}

void launch_unary_fn(const CudaArgs &a) {
  abi::UnaryFnAttrs f = abi::attrs<K::UnaryFn>(a.instr);
  int64_t n = a.out[0].numel;
  if (n == 0)
    return;
  TCC_LAUNCH(unaryFnKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, dt(a.in[0]), a.out[0].data, dt(a.out[0]), n, (int)f.fn,
   static_cast<float>(f.alpha), static_cast<float>(f.beta));
  checkLaunch(a.instr.kernel.c_str());
}

void launch_unary_fn_grad(const CudaArgs &a) {
  abi::UnaryFnAttrs f = abi::attrs<K::UnaryFnGrad>(a.instr);
  int64_t n = a.out[0].numel;
  if (n == 0)
    return;
  TCC_LAUNCH(unaryFnGradKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, dt(a.in[0]), a.in[1].data, dt(a.in[1]), a.out[0].data,
   dt(a.out[0]), n, (int)f.fn, static_cast<float>(f.alpha),
   static_cast<float>(f.beta));
  checkLaunch(a.instr.kernel.c_str());
}

void launch_binary(const CudaArgs &a) {
  int op = kPow;
  switch (kernelOf(a.instr)) {
  case K::Add:
    op = kAdd;
    break;
  case K::Sub:
    op = kSub;
    break;
  case K::Mul:
    op = kMul;
    break;
  case K::Div:
    op = kDiv;
    break;
  default:
    break; // pow
  }
  const TensorView &A = a.in[0], &B = a.in[1], &C = a.out[0];
  int64_t n = C.numel;
  if (n == 0)
    return;
  // The CPU kernel's fast cases: same layout, or a scalar operand.
  bool flat = (A.numel == n || A.numel == 1) && (B.numel == n || B.numel == 1);
  Strided<3> s{};
  if (!flat) {
    size_t rank = C.rank();
    s = makeStrided<3>(*C.shape, {abi::contiguousStrides(*C.shape),
                                  abi::broadcastStrides(*A.shape, rank),
                                  abi::broadcastStrides(*B.shape, rank)});
  }
  TCC_LAUNCH(binaryKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (A.data, dt(A), B.data, dt(B), C.data, dt(C), n, op, !flat,
   A.numel == n ? 1 : 0, B.numel == n ? 1 : 0, s);
  checkLaunch(a.instr.kernel.c_str());
}

// PyTorch: d lhs = dy * (b * a^(b-1)); d rhs = dy * (a^b * log(a)), 0 where
// a == 0 and b >= 0 (KernelsMath.cpp run_pow_grad).
__global__ void powGradKernel(const void *dy, int tdy, const void *a, int ta,
                              const void *b, int tb, void *da, int tda,
                              void *db, int tdb, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float g = ldf(dy, tdy, i), x = ldf(a, ta, i), e = ldf(b, tb, i);
    float dxa = g * (e * powf(x, e - 1.0f));
    float dxb = x == 0.0f && e >= 0.0f ? 0.0f : g * (powf(x, e) * logf(x));
    stf(da, tda, i, dxa);
    stf(db, tdb, i, dxb);
  }
}

void launch_pow_grad(const CudaArgs &a) {
  int64_t n = a.in[0].numel;
  if (n == 0)
    return;
  TCC_LAUNCH(powGradKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, dt(a.in[0]), a.in[1].data, dt(a.in[1]), a.in[2].data,
   dt(a.in[2]), a.out[0].data, dt(a.out[0]), a.out[1].data, dt(a.out[1]), n);
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// where
//===----------------------------------------------------------------------===//

template <class T>
__global__ void whereKernel(const long long *cond, const T *x, const T *z, T *y,
                            long long n, Strided<4> s) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    long long off[4];
    s.offsets(i, off);
    y[off[0]] = cond[off[1]] ? x[off[2]] : z[off[3]];
  }
}

void launch_where(const CudaArgs &a) {
  const TensorView &Y = a.out[0];
  if (Y.numel == 0)
    return;
  size_t rank = Y.rank();
  Strided<4> s =
      makeStrided<4>(*Y.shape, {abi::contiguousStrides(*Y.shape),
                                abi::broadcastStrides(*a.in[0].shape, rank),
                                abi::broadcastStrides(*a.in[1].shape, rank),
                                abi::broadcastStrides(*a.in[2].shape, rank)});
  byElementSize(Y.dtype, [&](auto w) {
    using T = typename decltype(w)::T;
    TCC_LAUNCH(whereKernel<T>, gridFor(Y.numel, kBlock, a.smCount), kBlock,
               a.stream)
    (static_cast<const long long *>(a.in[0].data),
     static_cast<const T *>(a.in[1].data), static_cast<const T *>(a.in[2].data),
     static_cast<T *>(Y.data), Y.numel, s);
  });
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// cast
//===----------------------------------------------------------------------===//

/// KernelsShape.cpp floatToI64: truncate, NaN -> 0, saturate.
__device__ __forceinline__ long long floatToI64(float v) {
  if (v != v) // NaN
    return 0;
  if (v >= 9.2233720368547758e18f)
    return 9223372036854775807LL;
  if (v < -9.2233720368547758e18f)
    return -9223372036854775807LL - 1;
  return static_cast<long long>(v);
}

__global__ void castKernel(const void *x, int tx, void *y, int ty, long long n,
                           bool toBool) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    if (tx == kDtI64 && ty == kDtI64) {
      long long v = static_cast<const long long *>(x)[i];
      static_cast<long long *>(y)[i] = toBool ? (v != 0) : v;
    } else if (ty == kDtI64) {
      float v = ldf(x, tx, i);
      static_cast<long long *>(y)[i] = toBool ? (v != 0.0f) : floatToI64(v);
    } else {
      // i64 -> float goes through f32 like the CPU (then one rounding to a
      // 16-bit type); float -> float widens exactly and rounds once.
      stf(y, ty, i, ldf(x, tx, i));
    }
  }
}

void launch_cast(const CudaArgs &a) {
  int64_t n = a.in[0].numel;
  if (n == 0)
    return;
  TCC_LAUNCH(castKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, dt(a.in[0]), a.out[0].data, dt(a.out[0]), n,
   abi::attrs<K::Cast>(a.instr).toBool);
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// dropout, increment
//===----------------------------------------------------------------------===//

/// SplitMix64's output function, as KernelsMath.cpp mix64.
__device__ __forceinline__ unsigned long long mix64(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The CPU's counter-based draw (KernelsMath.cpp run_dropout), element for
// element: the masks match bit for bit. `first`: the index of element 0,
// rank * n for data-parallel rank `rank`.
__global__ void dropoutKernel(const void *x, int tx, const long long *step,
                              void *y, int ty, void *mask, int tm, long long n,
                              unsigned long long first, unsigned long long seed,
                              unsigned long long threshold, float keep) {
  const unsigned long long key =
      mix64(seed ^ mix64(static_cast<unsigned long long>(step[0])));
  constexpr unsigned long long kGamma = 0x9E3779B97F4A7C15ull;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned long long bits =
        mix64(key + (first + static_cast<unsigned long long>(i) + 1) * kGamma);
    float m = (bits >> 32) < threshold ? 0.0f : keep;
    float xi = ldf(x, tx, i);
    stf(mask, tm, i, m);
    stf(y, ty, i, xi * m);
  }
}

void launch_dropout(const CudaArgs &a) {
  int64_t n = a.in[0].numel;
  if (n == 0)
    return;
  const abi::DropoutAttrs d = abi::attrs<K::Dropout>(a.instr);
  const double ratio = d.ratio;
  const auto threshold = static_cast<unsigned long long>(std::ldexp(ratio, 32));
  const float keep =
      ratio < 1.0 ? 1.0f / (1.0f - static_cast<float>(ratio)) : 0.0f;
  TCC_LAUNCH(dropoutKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, dt(a.in[0]), static_cast<const long long *>(a.in[1].data),
   a.out[0].data, dt(a.out[0]), a.out[1].data, dt(a.out[1]), n,
   static_cast<unsigned long long>(a.rank * n),
   static_cast<unsigned long long>(d.seed), threshold, keep);
  checkLaunch(a.instr.kernel.c_str());
}

// The CPU's run_random (KernelsMath.cpp), element for element, in the same
// double-precision expressions.
__global__ void randomKernel(const long long *step, void *y, int ty,
                             long long n, unsigned long long first,
                             unsigned long long seed, bool normal, double lo,
                             double hi) {
  const unsigned long long key =
      mix64(seed ^ mix64(static_cast<unsigned long long>(step[0])));
  constexpr unsigned long long kGamma = 0x9E3779B97F4A7C15ull;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned long long bits =
        mix64(key + (first + static_cast<unsigned long long>(i) + 1) * kGamma);
    float v;
    if (!normal) {
      float u = static_cast<float>(bits >> 40) * 0x1p-24f;
      v = static_cast<float>(lo + (hi - lo) * static_cast<double>(u));
    } else {
      double u1 = static_cast<double>((bits >> 32) + 1) * 0x1p-32;
      double u2 = static_cast<double>(bits & 0xFFFFFFFFull) * 0x1p-32;
      v = static_cast<float>(lo +
                             hi * (sqrt(-2.0 * log(u1)) * cos(kTwoPi * u2)));
    }
    stf(y, ty, i, v);
  }
}

void launch_random(const CudaArgs &a) {
  int64_t n = a.out[0].numel;
  if (n == 0)
    return;
  const abi::RandomAttrs r = abi::attrs<K::Random>(a.instr);
  TCC_LAUNCH(randomKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (static_cast<const long long *>(a.in[0].data), a.out[0].data, dt(a.out[0]), n,
   static_cast<unsigned long long>(a.rank * n),
   static_cast<unsigned long long>(r.seed), r.normal, r.a, r.b);
  checkLaunch(a.instr.kernel.c_str());
}

__global__ void incrementKernel(const long long *s, long long *out) {
  out[0] = s[0] + 1;
}

void launch_increment(const CudaArgs &a) {
  TCC_LAUNCH(incrementKernel, 1, 1, a.stream)
  (static_cast<const long long *>(a.in[0].data),
   static_cast<long long *>(a.out[0].data));
  checkLaunch(a.instr.kernel.c_str());
}

} // namespace tcc::rt::cuda

//===- CudaKernelsOptim.cu - SGD, SGD with momentum, AdamW ----------------===//
//
// Ports of KernelsOptim.cpp: torch.optim's single-tensor arithmetic in the
// same order and precision (the library is built without FMA contraction,
// so the updates match the CPU's bit for bit up to sqrtf/division, which
// are IEEE-exact on both). AdamW reads its step from the device, so each
// block derives the per-step scalars (in double, then cast to f32 where
// PyTorch casts them) itself.
//
// Multi-tensor AdamW: CudaSession turns a run of adamw_update instrs with
// the same hyper-parameters and step into one launch over a device table
// of AdamEntry (one per tensor) and AdamBlock (one per kChunk elements of
// a tensor), as PyTorch's fused/foreach optimizers do; a model with a
// hundred parameter tensors then costs one launch instead of a hundred.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaKernelsCommon.cuh"

namespace tcc::rt::cuda {

static constexpr int kBlock = 256;

__global__ void sgdKernel(const void *p, int tp, const void *g, int tg,
                          void *out, int to, long long n, float lr, float wd) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float pi = ldf(p, tp, i);
    float d = ldf(g, tg, i) + wd * pi;
    stf(out, to, i, pi - lr * d);
  }
}

void launch_sgd_update(const CudaArgs &a) {
  const abi::SgdAttrs h = abi::attrs<abi::KernelId::SgdUpdate>(a.instr);
  long long n = a.in[0].numel;
  if (n == 0)
    return;
  TCC_LAUNCH(sgdKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, dt(a.in[0]), a.in[1].data, dt(a.in[1]), a.out[0].data,
   dt(a.out[0]), n, static_cast<float>(h.lr),
   static_cast<float>(h.weightDecay));
  checkLaunch(a.instr.kernel.c_str());
}

__global__ void sgdMomentumKernel(const void *p, int tp, const void *g, int tg,
                                  const void *buf, int tb, void *pOut, int tpo,
                                  void *bufOut, int tbo, long long n, float lr,
                                  float momentum, float wd) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float pi = ldf(p, tp, i), bi = ldf(buf, tb, i);
    float d = ldf(g, tg, i) + wd * pi;
    float b = momentum * bi + d;
    stf(bufOut, tbo, i, b);
    stf(pOut, tpo, i, pi - lr * b);
  }
}

void launch_sgd_momentum_update(const CudaArgs &a) {
  long long n = a.in[0].numel;
  if (n == 0)
    return;
  const abi::SgdMomentumAttrs h =
      abi::attrs<abi::KernelId::SgdMomentumUpdate>(a.instr);
  TCC_LAUNCH(sgdMomentumKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, dt(a.in[0]), a.in[1].data, dt(a.in[1]), a.in[2].data,
   dt(a.in[2]), a.out[0].data, dt(a.out[0]), a.out[1].data, dt(a.out[1]), n,
   static_cast<float>(h.lr), static_cast<float>(h.momentum),
   static_cast<float>(h.weightDecay));
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// AdamW
//===----------------------------------------------------------------------===//

namespace {
struct AdamHyper {
  double lr, beta1, beta2, eps, wd;
};
/// The per-step scalars, as the f32 tensor ops of PyTorch see them; `inv`
/// unscales the gradient (1 without loss scaling: g * 1 is g), `keep` is a
/// skipped step's.
struct AdamScalars {
  float decay, wm, b2, w2, bc2Sqrt, eps, negStep, inv;
  bool lerpFromStart, keep;
};
} // namespace

/// Thread 0 computes the scalars of this step into `s` (shared).
__device__ void adamScalars(const AdamHyper &h, const void *step, int tstep,
                            AdamScaling sc, AdamScalars &s) {
  if (threadIdx.x == 0) {
    s.inv = sc.inv ? *static_cast<const float *>(sc.inv) : 1.0f;
    s.keep = sc.finite && *static_cast<const long long *>(sc.finite) == 0;
    const double t = ldf(step, tstep, 0);
    const double bc1 = 1.0 - pow(h.beta1, t);
    const double bc2 = 1.0 - pow(h.beta2, t);
    s.decay = static_cast<float>(1.0 - h.lr * h.wd);
    const float w1 = static_cast<float>(1.0 - h.beta1);
    // lerp(m, g, w) is m + w*(g-m) for w < 0.5, else g - (g-m)*(1-w).
    s.lerpFromStart = w1 < 0.5f;
    s.wm = s.lerpFromStart ? w1 : 1.0f - w1;
    s.b2 = static_cast<float>(h.beta2);
    s.w2 = static_cast<float>(1.0 - h.beta2);
    s.bc2Sqrt = static_cast<float>(sqrt(bc2));
    s.eps = static_cast<float>(h.eps);
    s.negStep = static_cast<float>(-(h.lr / bc1));
  }
  __syncthreads();
}

/// One element's update of p, m and v from its gradient g (not yet
/// unscaled).
__device__ __forceinline__ void adamwStep(float &p, float &m, float &v, float g,
                                          const AdamScalars &s) {
  g = g * s.inv;
  p = p * s.decay;                         // param.mul_
  m = s.lerpFromStart ? m + s.wm * (g - m) // exp_avg.lerp_
                      : g - (g - m) * s.wm;
  v = v * s.b2 + s.w2 * g * g;                // mul_.addcmul_
  float denom = sqrtf(v) / s.bc2Sqrt + s.eps; // sqrt/div/add
  p = p + s.negStep * m / denom;              // addcdiv_
}

/// Element i of entry e (KernelsOptim.cpp adamwElem).
__device__ __forceinline__ void adamwElem(const AdamEntry &e, long long i,
                                          const AdamScalars &s) {
  float p = ldf(e.p, e.dtP, i);
  float m = ldf(e.m, e.dtM, i), v = ldf(e.v, e.dtV, i);
  if (s.keep) { // a skipped step: the old values (in place: nothing to do)
    if (e.pOut != e.p)
      stf(e.pOut, e.dtP, i, p);
    if (e.mOut != e.m)
      stf(e.mOut, e.dtM, i, m);
    if (e.vOut != e.v)
      stf(e.vOut, e.dtV, i, v);
    if (e.lowOut) // the rounding of the old parameter: what the copy holds
      stf(e.lowOut, e.dtLow, i, p);
    return;
  }
  adamwStep(p, m, v, ldf(e.g, e.dtG, i), s);
  // Outputs have the dtypes of p, m, v (prepare_adamw_update checks).
  stf(e.pOut, e.dtP, i, p);
  stf(e.mOut, e.dtM, i, m);
  stf(e.vOut, e.dtV, i, v);
  if (e.lowOut)
    stf(e.lowOut, e.dtLow, i, p);
}

__global__ void adamwKernel(AdamEntry e, const void *step, int tstep,
                            AdamScaling sc, AdamHyper h) {
  __shared__ AdamScalars s;
  adamScalars(h, step, tstep, sc, s);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < e.n;
       i += (long long)gridDim.x * blockDim.x)
    adamwElem(e, i, s);
}

__global__ void adamwMultiKernel(const AdamEntry *entries,
                                 const AdamBlock *blocks, long long numBlocks,
                                 const void *step, int tstep, AdamScaling sc,
                                 AdamHyper h) {
  __shared__ AdamScalars s;
  adamScalars(h, step, tstep, sc, s);
  for (long long b = blockIdx.x; b < numBlocks; b += gridDim.x) {
    const AdamBlock blk = blocks[b];
    const AdamEntry e = entries[blk.entry];
    long long end = blk.start + kAdamChunk < e.n ? blk.start + kAdamChunk : e.n;
    const long long stride = blockDim.x;
    long long i = blk.start + threadIdx.x;
    // An f32 parameter, gradient and moments (mixed precision's master
    // weights): four elements a thread at a time, all loads first. One at
    // a time, through the dtype switches, a thread's next loads waited for
    // its divisions and square root.
    if (!s.keep && e.dtP == kDtF32 && e.dtG == kDtF32 && e.dtM == kDtF32 &&
        e.dtV == kDtF32) {
      const float *P = static_cast<const float *>(e.p),
                  *G = static_cast<const float *>(e.g),
                  *M = static_cast<const float *>(e.m),
                  *V = static_cast<const float *>(e.v);
      float *PO = static_cast<float *>(e.pOut),
            *MO = static_cast<float *>(e.mOut),
            *VO = static_cast<float *>(e.vOut);
      for (; i + 3 * stride < end; i += 4 * stride) {
        float p[4], m[4], v[4], g[4];
        TCC_UNROLL
        for (int u = 0; u < 4; ++u) {
          p[u] = P[i + u * stride];
          m[u] = M[i + u * stride];
          v[u] = V[i + u * stride];
          g[u] = G[i + u * stride];
        }
        TCC_UNROLL
        for (int u = 0; u < 4; ++u) {
          adamwStep(p[u], m[u], v[u], g[u], s);
          PO[i + u * stride] = p[u];
          MO[i + u * stride] = m[u];
          VO[i + u * stride] = v[u];
        }
        if (e.lowOut) {
          TCC_UNROLL
          for (int u = 0; u < 4; ++u)
            stf(e.lowOut, e.dtLow, i + u * stride, p[u]);
        }
      }
    }
    for (; i < end; i += stride)
      adamwElem(e, i, s);
  }
}

static AdamHyper hyper(const abi::AdamwAttrs &h) {
  return AdamHyper{h.lr, h.beta1, h.beta2, h.eps, h.weightDecay};
}

void launch_adamw_update(const CudaArgs &a) {
  AdamEntry e{a.in[0].data,  a.in[1].data,  a.in[2].data,  a.in[3].data,
              a.out[0].data, a.out[1].data, a.out[2].data, a.in[0].numel,
              dt(a.in[0]),   dt(a.in[1]),   dt(a.in[2]),   dt(a.in[3])};
  if (a.out.size() == 4) {
    e.lowOut = a.out[3].data;
    e.dtLow = dt(a.out[3]);
  }
  if (e.n == 0)
    return;
  // As adamScaling, from the views.
  AdamScaling sc;
  if (a.in.size() == 7)
    sc = {a.in[5].data, a.in[6].data};
  TCC_LAUNCH(adamwKernel, gridFor(e.n, kBlock, a.smCount), kBlock, a.stream)
  (e, a.in[4].data, dt(a.in[4]), sc,
   hyper(abi::attrs<abi::KernelId::AdamwUpdate>(a.instr)));
  checkLaunch(a.instr.kernel.c_str());
}

void launchAdamwMulti(const AdamEntry *entries, const AdamBlock *blocks,
                      int64_t numBlocks, const void *step, DType stepDt,
                      AdamScaling sc, const abi::AdamwAttrs &h,
                      cudaStream_t stream) {
  (void)stream; // unused when emulated
  if (numBlocks == 0)
    return;
  unsigned grid =
      static_cast<unsigned>(numBlocks < (1LL << 20) ? numBlocks : (1LL << 20));
  TCC_LAUNCH(adamwMultiKernel, grid, kBlock, stream)
  (entries, blocks, numBlocks, step, static_cast<int>(stepDt), sc, hyper(h));
  checkLaunch(
      (std::string(abi::name(abi::KernelId::AdamwUpdate)) + " (multi-tensor)")
          .c_str());
}

} // namespace tcc::rt::cuda

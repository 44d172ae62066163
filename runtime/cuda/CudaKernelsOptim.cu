//===- CudaKernelsOptim.cu - SGD, Adam(W) and Lion ------------------------===//
//
// Ports of KernelsOptim.cpp: torch.optim's single-tensor arithmetic in the
// same order and precision (the library is built without FMA contraction,
// so the updates match the CPU's bit for bit up to sqrtf/division, which
// are IEEE-exact on both). Every update reads the learning rate from the
// device (the train loop changes it between steps, and a CUDA graph would
// replay a launch argument), and AdamW its step too, so each block derives
// the per-step scalars (in double, then cast to f32 where PyTorch casts
// them) itself.
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
                          void *out, int to, long long n, const float *lrPtr,
                          float wd) {
  const float lr = *lrPtr;
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
   dt(a.out[0]), n, static_cast<const float *>(a.in[2].data),
   static_cast<float>(h.weightDecay));
  checkLaunch(a.instr.kernel.c_str());
}

__global__ void sgdMomentumKernel(const void *p, int tp, const void *g, int tg,
                                  const void *buf, int tb, void *pOut, int tpo,
                                  void *bufOut, int tbo, long long n,
                                  const float *lrPtr, float momentum, float wd,
                                  bool nesterov) {
  const float lr = *lrPtr;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float pi = ldf(p, tp, i), bi = ldf(buf, tb, i);
    float d = ldf(g, tg, i) + wd * pi;
    float b = momentum * bi + d;
    stf(bufOut, tbo, i, b);
    stf(pOut, tpo, i, pi - lr * (nesterov ? d + momentum * b : b));
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
   static_cast<const float *>(a.in[3].data), static_cast<float>(h.momentum),
   static_cast<float>(h.weightDecay), h.nesterov);
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// Lion (KernelsOptim.cpp run_lion_update)
//===----------------------------------------------------------------------===//

__global__ void lionKernel(const void *p, int tp, const void *g, int tg,
                           const void *m, int tm, void *pOut, int tpo,
                           void *mOut, int tmo, long long n, const float *lrPtr,
                           double beta1, double beta2, double wd) {
  const float lr = *lrPtr;
  const float decay = static_cast<float>(1.0 - double(lr) * wd);
  const float b1 = static_cast<float>(beta1),
              w1 = static_cast<float>(1.0 - beta1);
  const float b2 = static_cast<float>(beta2),
              w2 = static_cast<float>(1.0 - beta2);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float pi = ldf(p, tp, i), gi = ldf(g, tg, i), mi = ldf(m, tm, i);
    float c = mi * b1 + w1 * gi;
    float u = static_cast<float>((c > 0.0f) - (c < 0.0f));
    pi = pi * decay;
    stf(pOut, tpo, i, pi - lr * u);
    stf(mOut, tmo, i, mi * b2 + w2 * gi);
  }
}

void launch_lion_update(const CudaArgs &a) {
  long long n = a.in[0].numel;
  if (n == 0)
    return;
  const abi::LionAttrs h = abi::attrs<abi::KernelId::LionUpdate>(a.instr);
  TCC_LAUNCH(lionKernel, gridFor(n, kBlock, a.smCount), kBlock, a.stream)
  (a.in[0].data, dt(a.in[0]), a.in[1].data, dt(a.in[1]), a.in[2].data,
   dt(a.in[2]), a.out[0].data, dt(a.out[0]), a.out[1].data, dt(a.out[1]), n,
   static_cast<const float *>(a.in[3].data), h.beta1, h.beta2, h.weightDecay);
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// Adafactor (KernelsOptim.cpp run_adafactor_update)
//===----------------------------------------------------------------------===//

namespace {
struct AdafactorHyper {
  double beta2Decay, eps1, eps2, d, wd;
};
/// A parameter of `batches` matrices [rows, cols] (unfactored: 1 x n).
struct AdafactorShape {
  long long n, batches, rows, cols;
  bool factored;
};
} // namespace

__device__ __forceinline__ float lerpF(float self, float end, float w) {
  return w < 0.5f ? self + w * (end - self) : end - (end - self) * (1.0f - w);
}

/// One block updates the whole parameter: the step size needs the norms of
/// the parameter and of the update, and the variance estimate the row
/// means, so the passes are separated by block-wide reductions. Correct
/// but one multiprocessor per parameter (Adafactor is chosen for memory,
/// not speed; a multi-block version is future work).
__global__ void adafactorKernel(const float *p, const float *g,
                                const void *step, int tstep, const float *lrp,
                                const float *m0, const float *m1, float *pOut,
                                float *m0Out, float *m1Out, AdafactorShape sh,
                                AdafactorHyper h) {
  __shared__ double red[32];
  const double t = ldf(step, tstep, 0), lr = *lrp;
  const float w = static_cast<float>(pow(t, h.beta2Decay));
  const double rhoMax = 1.0 / sqrt(t);
  const double rho = lr < rhoMax ? lr : rhoMax;
  double pn = 0;
  for (long long i = threadIdx.x; i < sh.n; i += blockDim.x)
    pn += double(p[i]) * p[i];
  pn = blockSum(pn, red);
  const double rms = sqrt(pn) / sqrt(double(sh.n));
  const double alpha = (h.eps2 > rms ? h.eps2 : rms) * rho;
  __syncthreads(); // p is read everywhere before p' (maybe p) is written
  const float decay = static_cast<float>(1.0 - lr * h.wd);
  for (long long i = threadIdx.x; i < sh.n; i += blockDim.x)
    pOut[i] = h.wd != 0 ? p[i] * decay : p[i];
  const float eps1 = static_cast<float>(h.eps1);
  const float eps1Sq = static_cast<float>(h.eps1 * h.eps1);
  const long long R = sh.rows, C = sh.cols;
  if (sh.factored) {
    for (long long r = threadIdx.x; r < sh.batches * R; r += blockDim.x) {
      const float *gr = g + r * C;
      double ss = 0;
      for (long long j = 0; j < C; ++j)
        ss += double(gr[j]) * gr[j];
      float nrm = static_cast<float>(sqrt(ss));
      m0Out[r] = lerpF(m0[r], nrm * nrm / float(C), w);
    }
    for (long long c = threadIdx.x; c < sh.batches * C; c += blockDim.x) {
      const float *gb = g + (c / C) * R * C + c % C;
      double ss = 0;
      for (long long i = 0; i < R; ++i)
        ss += double(gb[i * C]) * gb[i * C];
      float nrm = static_cast<float>(sqrt(ss));
      m1Out[c] = lerpF(m1[c], nrm * nrm / float(R), w);
    }
  } else {
    for (long long i = threadIdx.x; i < sh.n; i += blockDim.x)
      m0Out[i] = lerpF(m0[i], g[i] * g[i], w);
  }
  __syncthreads();
  // Pass 0 sums the update's squares, pass 1 applies it.
  double scaleD = 0;
  for (int pass = 0; pass < 2; ++pass) {
    double uu = 0;
    const float scale = static_cast<float>(scaleD);
    for (long long b = 0; b < sh.batches; ++b) {
      float rowMean = 1.0f;
      if (sh.factored) {
        double rs = 0;
        for (long long i = threadIdx.x; i < R; i += blockDim.x)
          rs += m0Out[b * R + i];
        rs = blockSum(rs, red);
        float m = static_cast<float>(rs / double(R));
        rowMean = m > eps1 ? m : eps1;
      }
      for (long long k = threadIdx.x; k < R * C; k += blockDim.x) {
        long long e = b * R * C + k;
        float v = sh.factored
                      ? m0Out[b * R + k / C] * m1Out[b * C + k % C] / rowMean
                      : m0Out[e];
        float u = 1.0f / sqrtf(v > eps1Sq ? v : eps1Sq) * g[e];
        if (pass == 0)
          uu += double(u) * u;
        else
          pOut[e] = pOut[e] + scale * u;
      }
    }
    if (pass == 0) {
      uu = blockSum(uu, red);
      double q = sqrt(uu) / (sqrt(double(sh.n)) * h.d);
      scaleD = -alpha / (q > 1.0 ? q : 1.0);
    }
  }
}

void launch_adafactor_update(const CudaArgs &a) {
  const abi::AdafactorAttrs h =
      abi::attrs<abi::KernelId::AdafactorUpdate>(a.instr);
  AdafactorShape sh{a.in[0].numel, 1, 1, a.in[0].numel, a.in.size() == 6};
  if (sh.n == 0)
    return;
  if (sh.factored) {
    const std::vector<int64_t> &s = *a.in[0].shape;
    sh.rows = s[s.size() - 2];
    sh.cols = s.back();
    sh.batches = sh.n / (sh.rows * sh.cols);
  }
  auto f = [&](const TensorView &v) { return static_cast<float *>(v.data); };
  TCC_LAUNCH(adafactorKernel, 1, kBlock, a.stream)
  (f(a.in[0]), f(a.in[1]), a.in[2].data, dt(a.in[2]), f(a.in[3]), f(a.in[4]),
   sh.factored ? f(a.in[5]) : nullptr, f(a.out[0]), f(a.out[1]),
   sh.factored ? f(a.out[2]) : nullptr, sh,
   AdafactorHyper{h.beta2Decay, h.eps1, h.eps2, h.d, h.weightDecay});
  checkLaunch(a.instr.kernel.c_str());
}

//===----------------------------------------------------------------------===//
// AdamW
//===----------------------------------------------------------------------===//

namespace {
struct AdamHyper {
  double beta1, beta2, eps, wd;
  bool l2;
};
/// The per-step scalars, as the f32 tensor ops of PyTorch see them; `inv`
/// unscales the gradient (1 without loss scaling: g * 1 is g), `keep` is a
/// skipped step's; `l2` is Adam's decay added to the gradient (0 for
/// AdamW, whose decay is `decay`).
struct AdamScalars {
  float decay, wm, b2, w2, bc2Sqrt, eps, negStep, inv, l2;
  bool lerpFromStart, keep, useL2;
};
} // namespace

/// Thread 0 computes the scalars of this step into `s` (shared), from the
/// learning rate `lr` (f32) and step in device memory.
__device__ void adamScalars(const AdamHyper &h, const void *step, int tstep,
                            const float *lr, AdamScaling sc, AdamScalars &s) {
  if (threadIdx.x == 0) {
    s.inv = sc.inv ? *static_cast<const float *>(sc.inv) : 1.0f;
    s.keep = sc.finite && *static_cast<const long long *>(sc.finite) == 0;
    const double t = ldf(step, tstep, 0);
    const double lrD = *lr;
    const double bc1 = 1.0 - pow(h.beta1, t);
    const double bc2 = 1.0 - pow(h.beta2, t);
    s.useL2 = h.l2;
    s.l2 = static_cast<float>(h.wd);
    s.decay = h.l2 ? 1.0f : static_cast<float>(1.0 - lrD * h.wd);
    const float w1 = static_cast<float>(1.0 - h.beta1);
    // lerp(m, g, w) is m + w*(g-m) for w < 0.5, else g - (g-m)*(1-w).
    s.lerpFromStart = w1 < 0.5f;
    s.wm = s.lerpFromStart ? w1 : 1.0f - w1;
    s.b2 = static_cast<float>(h.beta2);
    s.w2 = static_cast<float>(1.0 - h.beta2);
    s.bc2Sqrt = static_cast<float>(sqrt(bc2));
    s.eps = static_cast<float>(h.eps);
    s.negStep = static_cast<float>(-(lrD / bc1));
  }
  __syncthreads();
}

/// One element's update of p, m and v from its gradient g (not yet
/// unscaled).
__device__ __forceinline__ void adamwStep(float &p, float &m, float &v, float g,
                                          const AdamScalars &s) {
  g = g * s.inv;
  if (s.useL2)
    g = g + s.l2 * p; // Adam: grad.add(param, alpha=wd)
  else
    p = p * s.decay;                       // AdamW: param.mul_
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
                            const float *lr, AdamScaling sc, AdamHyper h) {
  __shared__ AdamScalars s;
  adamScalars(h, step, tstep, lr, sc, s);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < e.n;
       i += (long long)gridDim.x * blockDim.x)
    adamwElem(e, i, s);
}

__global__ void adamwMultiKernel(const AdamEntry *entries,
                                 const AdamBlock *blocks, long long numBlocks,
                                 const void *step, int tstep, const float *lr,
                                 AdamScaling sc, AdamHyper h) {
  __shared__ AdamScalars s;
  adamScalars(h, step, tstep, lr, sc, s);
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
  return AdamHyper{h.beta1, h.beta2, h.eps, h.weightDecay, h.l2Decay};
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
  if (a.in.size() == 8)
    sc = {a.in[6].data, a.in[7].data};
  TCC_LAUNCH(adamwKernel, gridFor(e.n, kBlock, a.smCount), kBlock, a.stream)
  (e, a.in[4].data, dt(a.in[4]), static_cast<const float *>(a.in[5].data), sc,
   hyper(abi::attrs<abi::KernelId::AdamwUpdate>(a.instr)));
  checkLaunch(a.instr.kernel.c_str());
}

void launchAdamwMulti(const AdamEntry *entries, const AdamBlock *blocks,
                      int64_t numBlocks, const void *step, DType stepDt,
                      const float *lr, AdamScaling sc, const abi::AdamwAttrs &h,
                      cudaStream_t stream) {
  (void)stream; // unused when emulated
  if (numBlocks == 0)
    return;
  unsigned grid =
      static_cast<unsigned>(numBlocks < (1LL << 20) ? numBlocks : (1LL << 20));
  TCC_LAUNCH(adamwMultiKernel, grid, kBlock, stream)
  (entries, blocks, numBlocks, step, static_cast<int>(stepDt), lr, sc,
   hyper(h));
  checkLaunch(
      (std::string(abi::name(abi::KernelId::AdamwUpdate)) + " (multi-tensor)")
          .c_str());
}

} // namespace tcc::rt::cuda

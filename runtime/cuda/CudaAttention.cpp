//===- CudaAttention.cpp - attention / attention_grad chunk loops ---------===//
//
// See CudaAttention.h. The chunk loops only enqueue work (GEMMs, row
// passes, memsets) on the stream: no allocation and no synchronization, so
// they run inside a CUDA graph capture. The plan depends on the shapes only,
// so `prepare` and every launch agree on the chunk and the scratch.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAttention.h"

#include "runtime/cuda/CudaCheck.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace tcc::rt::cuda {

/// Checks what the chunk loops rely on beyond checkInstr (which validated
/// the operands against Kernels.h) and returns the plan.
static AttentionPlan planOf(const Instr &in, const std::vector<TensorInfo> &t) {
  bool grad = abi::is(in, abi::KernelId::AttentionGrad);
  size_t nIn = grad ? 6 : 3;
  // attention and attention_grad share AttentionAttrs: a fused-QKV
  // backward writes one gradient.
  const abi::AttentionAttrs at = abi::attrsOf<abi::AttentionAttrs>(in);
  bool fused = at.fusedQkv;
  size_t nOut = grad ? (fused ? 1 : 3) : 2;
  // A fused-QKV backward may add its column sums.
  if (grad && fused && in.outputs.size() == 2)
    nOut = 2;
  if (in.inputs.size() < nIn || in.inputs.size() > nIn + 1 ||
      in.outputs.size() != nOut)
    throw Error("the CUDA " + in.kernel + " kernel takes " +
                std::to_string(nIn) + " or " + std::to_string(nIn + 1) +
                " inputs and " + std::to_string(nOut) + " outputs");
  const TensorInfo &q = t[in.inputs[0]], &k = t[in.inputs[1]],
                   &v = t[in.inputs[2]];
  for (const TensorInfo *x : {&q, &k, &v})
    if (x->shape.size() < 3 || x->shape.size() != q.shape.size())
      throw Error("the CUDA " + in.kernel +
                  " kernel takes q, k and v of one rank >= 3 ('" + x->name +
                  "' has rank " + std::to_string(x->shape.size()) + ")");
  // cuBLASLt's types: f32, or bf16/f16 with an f32 S and dP.
  if (q.dtype != DType::F32 && !isHalfDType(q.dtype))
    throw Error("no CUDA " + in.kernel + " kernel for " + dtypeName(q.dtype) +
                " operands ('" + q.name + "'); it takes f32, bf16 or f16");
  return planAttention(attentionDims(q.shape, k.shape, v.shape, at), q.dtype);
}

namespace {
/// A setting's value: unset, empty or `first` gives vFirst, `second`
/// vSecond; anything else throws Error naming the variable, the value and
/// what it takes.
template <class T>
T oneOf(const char *variable, const char *value, const char *first, T vFirst,
        const char *second, T vSecond) {
  if (!value || !*value || std::string(value) == first)
    return vFirst;
  if (std::string(value) == second)
    return vSecond;
  throw Error(std::string(variable) + " is '" + value + "'; it takes '" +
              first + "' or '" + second + "'");
}

/// One of the tiled kernels' settings: its environment variable, read and
/// parsed once, unless a test chose another value (`Unset`: none chosen).
template <class T, T Unset, T (*Parse)(const char *)> struct Setting {
  const char *variable;
  std::atomic<T> chosen{Unset};
  T get() {
    T c = chosen.load(std::memory_order_relaxed);
    if (c != Unset)
      return c;
    static const T fromEnv = Parse(std::getenv(variable));
    return fromEnv;
  }
  void choose(T value) { chosen.store(value, std::memory_order_relaxed); }
};
} // namespace

bool tiledAttentionAllowed(const char *value) {
  return oneOf("TCC_CUDA_ATTENTION", value, "tiled", true, "chunked", false);
}

static bool tilesAllowed() {
  static const bool allowed =
      tiledAttentionAllowed(std::getenv("TCC_CUDA_ATTENTION"));
  return allowed;
}

int attentionWarpRows(const char *value) {
  return oneOf("TCC_CUDA_ATTENTION_WARP_ROWS", value, "16", 16, "32", 32);
}

static Setting<int, 0, attentionWarpRows> warpRows{
    "TCC_CUDA_ATTENTION_WARP_ROWS"};

int tiledAttentionWarpRows() { return warpRows.get(); }

void setTiledAttentionWarpRows(int rows) {
  if (rows != 0 && rows != 16 && rows != 32)
    throw Error("the tiled attention's warps take 16 or 32 rows, not " +
                std::to_string(rows));
  warpRows.choose(rows);
}

TileCopies attentionTileCopies(const char *value) {
  return oneOf("TCC_CUDA_ATTENTION_COPY", value, "tma", TileCopies::Tma,
               "async", TileCopies::Async);
}

static Setting<TileCopies, TileCopies::Environment, attentionTileCopies> copies{
    "TCC_CUDA_ATTENTION_COPY"};

TileCopies tiledAttentionCopies() { return copies.get(); }

void setTiledAttentionCopies(TileCopies c) { copies.choose(c); }

TileProducts attentionTileProducts(const char *value) {
  return oneOf("TCC_CUDA_ATTENTION_MMA", value, "wgmma", TileProducts::Wgmma,
               "sync", TileProducts::Sync);
}

static Setting<TileProducts, TileProducts::Environment, attentionTileProducts>
    products{"TCC_CUDA_ATTENTION_MMA"};

TileProducts tiledAttentionProducts() { return products.get(); }

void setTiledAttentionProducts(TileProducts p) { products.choose(p); }

static bool startsAligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

bool attentionTmaFits(const AttentionTiles &t, bool grad, int major) {
  // A row of entry e starts (outer * T + i) * pitch + head * d elements in;
  // the copies' coordinates (column, row, outer index) are 32-bit.
  constexpr long long kMax = 0x7fffffffll;
  if (major < 9 || t.d % 8 != 0 || t.inputPitch % 8 != 0 || t.heads < 1 ||
      t.tq > kMax || t.tk > kMax || t.batch / t.heads > kMax ||
      t.heads * t.d > kMax || !startsAligned16(t.q) || !startsAligned16(t.k) ||
      !startsAligned16(t.v))
    return false;
  return !grad || ((t.heads * t.d) % 8 == 0 && startsAligned16(t.dout));
}

/// An attribute of the GPU (its compute capability), 0 where it cannot be
/// read.
static int gpuAttribute(cudaDeviceAttr attr) {
  int dev = 0, v = 0;
  return cudaGetDevice(&dev) == cudaSuccess &&
                 cudaDeviceGetAttribute(&v, attr, dev) == cudaSuccess
             ? v
             : 0;
}
static int gpuMajor() {
  static const int major = gpuAttribute(cudaDevAttrComputeCapabilityMajor);
  return major;
}
static int gpuMinor() {
  static const int minor = gpuAttribute(cudaDevAttrComputeCapabilityMinor);
  return minor;
}

bool tiledAttentionTma(const AttentionTiles &t, bool grad) {
  return tiledAttentionCopies() == TileCopies::Tma &&
         attentionTmaFits(t, grad, gpuMajor());
}

bool attentionWgmmaFits(const AttentionTiles &t, bool grad, int major,
                        int minor) {
#ifdef TCC_CUDA_HAS_SM90A
  constexpr bool built = true;
#else
  constexpr bool built = false;
#endif
  return built && major == 9 && minor == 0 && t.d == 64 &&
         attentionTmaFits(t, grad, major);
}

bool tiledAttentionWgmma(const AttentionTiles &t, bool grad) {
  return tiledAttentionProducts() == TileProducts::Wgmma &&
         attentionWgmmaFits(t, grad, gpuMajor(), gpuMinor());
}

/// mma.sync on bf16 needs compute capability 8.0 or later, and the largest
/// kernel more shared memory than some of those GPUs give a block (A100
/// and H100 do; the 8.6 and 8.9 parts do not).
static bool gpuHasTiles() {
  static const bool has = [] {
    int dev = 0, smem = 0;
    return gpuMajor() >= 8 && cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&smem,
                                  cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                  dev) == cudaSuccess &&
           smem >= attentionTiledSmemBytes();
  }();
  return has;
}

/// Whether the instr runs the tiled kernels (CudaAttention.h): they fit
/// the sizes, k, v (and dO) have q's dtype, and the GPU and the
/// environment allow them. `prepare` and the launches decide alike.
static bool useTiles(const Instr &in, const AttentionDims &dims,
                     const std::vector<DType> &types) {
  for (size_t i = 1; i < 3; ++i)
    if (types[i] != types[0])
      return false;
  if (abi::is(in, abi::KernelId::AttentionGrad) && types[5] != types[0])
    return false;
  return attentionTilesFit(dims, types[0]) && tilesAllowed() && gpuHasTiles();
}

static std::vector<DType> inputTypes(const Instr &in,
                                     const std::vector<TensorInfo> &t) {
  std::vector<DType> types;
  for (int32_t id : in.inputs)
    types.push_back(t[id].dtype);
  return types;
}

/// Where the column sums' slices start in the scratch: after what the
/// tiled kernels or the chunk loop take.
static int64_t sumsOffset(const AttentionPlan &plan, bool tiles) {
  return attentionSumsOffset(tiles ? attentionTilesScratch(plan)
                                   : plan.scratchBytes);
}

int64_t prepare_attention(const Instr &in, const std::vector<TensorInfo> &t) {
  AttentionPlan plan = planOf(in, t);
  bool tiles = useTiles(in, plan, inputTypes(in, t));
  if (attentionWritesColumnSums(in))
    return sumsOffset(plan, tiles) + attentionSumsBytes(plan);
  return tiles ? attentionTilesScratch(plan) : plan.scratchBytes;
}

/// One GEMM of the loop; an empty C is skipped and an empty sum (k = 0)
/// is zeros: only C's rows, which between the heads of a sequence-major
/// operand are other entries' rows.
static void gemmOrZero(const AttentionGemm &gemm, const CudaGemm::Problem &p,
                       const void *a, const void *b, void *c,
                       cudaStream_t stream) {
  if (p.m == 0 || p.n == 0 || p.batch == 0)
    return;
  if (p.k == 0) {
    size_t es = dtypeSize(p.c);
    int64_t ldc = CudaGemm::ldOf(p).c;
    if (ldc == p.n) {
      int64_t n = (p.batch - 1) * p.strideC + p.m * p.n;
      TCC_CUDA_CHECK(
          cudaMemsetAsync(c, 0, static_cast<size_t>(n) * es, stream));
      return;
    }
    // A run of heads (operand(): batch stride = the row's length): row i
    // of all its entries is one contiguous stretch.
    assert(p.strideC == p.n);
    TCC_CUDA_CHECK(cudaMemset2DAsync(c, static_cast<size_t>(ldc) * es, 0,
                                     static_cast<size_t>(p.batch * p.n) * es,
                                     static_cast<size_t>(p.m), stream));
    return;
  }
  gemm(p, a, b, c);
}

namespace {
/// A GEMM operand from one entry on: where it starts, the batch stride
/// and the leading dim (0: packed), in elements.
struct Mat {
  char *p;
  int64_t stride, ld;
};
} // namespace

/// Entries e0, e0 + 1, ... of operand `t` (`rows` x `cols` per entry) in
/// the plan's layout; within a run the next entry is the next head.
/// `part` 0, 1, 2: q, k or v or their gradients (fused_qkv: a third of one
/// tensor); -1 for the others.
static Mat operand(const TensorView &t, const AttentionPlan &pl, int64_t e0,
                   int64_t rows, int64_t cols, int part = -1) {
  char *base = static_cast<char *>(t.data);
  int64_t es = static_cast<int64_t>(dtypeSize(t.dtype));
  if (pl.heads == 1)
    return {base + e0 * rows * cols * es, rows * cols, 0};
  return {base + pl.entryOffset(e0, rows, cols, part) * es, cols,
          pl.pitch(cols, part)};
}

/// Entry `i` of the chunk in the scratch array at `base` of type `t`.
static Mat scratch(void *base, DType t, const AttentionPlan &pl, int64_t i) {
  return {static_cast<char *>(base) +
              i * pl.entryStride * static_cast<int64_t>(dtypeSize(t)),
          pl.entryStride, 0};
}

/// C = op(A) op(B), m x n x k, for `batch` entries.
static void gemmOf(const AttentionGemm &gemm, DType ab, DType ct, bool transA,
                   bool transB, int64_t m, int64_t n, int64_t k, int64_t batch,
                   const Mat &a, const Mat &b, const Mat &c,
                   cudaStream_t stream) {
  CudaGemm::Problem p;
  p.ab = ab;
  p.c = ct;
  p.transA = transA;
  p.transB = transB;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.strideA = a.stride;
  p.strideB = b.stride;
  p.strideC = c.stride;
  p.lda = a.ld;
  p.ldb = b.ld;
  p.ldc = c.ld;
  gemmOrZero(gemm, p, a.p, b.p, c.p, stream);
}

/// Calls f(e0, count) for the runs of chunk [b0, b0 + n) that one
/// strided-batched GEMM covers: the whole chunk when packed, else the
/// entries of one outer index each (one stride between heads; the next
/// outer index is rows * heads * cols further on, not one more stride).
template <class F>
static void forEachRun(const AttentionPlan &pl, int64_t b0, int64_t n, F f) {
  for (int64_t e = b0, end = b0 + n; e < end;) {
    int64_t next =
        pl.heads == 1 ? end : std::min(end, (e / pl.heads + 1) * pl.heads);
    f(e, next - e);
    e = next;
  }
}

/// The row passes' view of chunk [b0, b0 + n): scale, causal and how the
/// mask (rank 2, or rank(q) with batch dims all 1 or all q's; each of its
/// last two dims 1 or full) broadcasts.
static AttentionRows rowsOf(const CudaArgs &a, const AttentionPlan &pl,
                            const TensorView *mask, int64_t b0, int64_t n) {
  AttentionRows r;
  r.rows = n * pl.tq;
  r.tq = pl.tq;
  r.tk = pl.tk;
  r.entryStride = pl.entryStride;
  r.firstRow = b0 * pl.tq;
  r.firstEntry = b0;
  r.heads = pl.heads;
  const abi::AttentionAttrs at = abi::attrsOf<abi::AttentionAttrs>(a.instr);
  r.causal = at.causal;
  r.scale = static_cast<float>(at.scale);
  if (mask) {
    size_t mr = mask->rank();
    int64_t rowsDim = mask->dim(mr - 2), colsDim = mask->dim(mr - 1);
    int64_t plane = rowsDim * colsDim;
    r.mask = static_cast<const float *>(mask->data);
    r.mEntry = plane > 0 && mask->numel / plane > 1 ? plane : 0;
    r.mRow = rowsDim == 1 ? 0 : colsDim;
    r.mCol = colsDim == 1 ? 0 : 1;
  }
  return r;
}

void runAttention(const CudaArgs &a, const AttentionPlan &pl,
                  const AttentionGemm &gemm) {
  const TensorView &Q = a.in[0], &K = a.in[1], &V = a.in[2];
  const TensorView &O = a.out[0], &L = a.out[1];
  const TensorView *mask = a.in.size() > 3 ? &a.in[3] : nullptr;
  DType t = Q.dtype;
  float *S = static_cast<float *>(a.scratch);
  void *P = static_cast<char *>(a.scratch) + pl.pOffset;
  const int64_t tq = pl.tq, tk = pl.tk, d = pl.d, dv = pl.dv;
  for (int64_t b0 = 0; b0 < pl.batch; b0 += pl.chunk) {
    int64_t n = std::min(pl.chunk, pl.batch - b0);
    // S = Q K^T (f32).
    forEachRun(pl, b0, n, [&](int64_t e0, int64_t cnt) {
      gemmOf(gemm, t, DType::F32, false, true, tq, tk, d, cnt,
             operand(Q, pl, e0, tq, d, 0), operand(K, pl, e0, tk, d, 1),
             scratch(S, DType::F32, pl, e0 - b0), a.stream);
    });
    attentionRows(rowsOf(a, pl, mask, b0, n), S, P, static_cast<int>(t),
                  L.f32(), false, a.stream);
    // O = P V.
    forEachRun(pl, b0, n, [&](int64_t e0, int64_t cnt) {
      gemmOf(gemm, t, O.dtype, false, false, tq, dv, tk, cnt,
             scratch(P, t, pl, e0 - b0), operand(V, pl, e0, tk, dv, 2),
             operand(O, pl, e0, tq, dv), a.stream);
    });
  }
}

void runAttentionGrad(const CudaArgs &a, const AttentionPlan &pl,
                      const AttentionGemm &gemm) {
  const TensorView &Q = a.in[0], &K = a.in[1], &V = a.in[2], &O = a.in[3],
                   &L = a.in[4], &dO = a.in[5];
  // fused_qkv: the thirds of one gradient (operand()'s parts 0, 1, 2).
  bool fused = pl.fusedQkv;
  const TensorView &dQ = a.out[0], &dK = a.out[fused ? 0 : 1],
                   &dV = a.out[fused ? 0 : 2];
  const TensorView *mask = a.in.size() > 6 ? &a.in[6] : nullptr;
  DType t = Q.dtype;
  float *S = static_cast<float *>(a.scratch);            // S, then dP
  void *P = static_cast<char *>(a.scratch) + pl.pOffset; // P, then dS
  const int64_t tq = pl.tq, tk = pl.tk, d = pl.d, dv = pl.dv;
  for (int64_t b0 = 0; b0 < pl.batch; b0 += pl.chunk) {
    int64_t n = std::min(pl.chunk, pl.batch - b0);
    AttentionRows rows = rowsOf(a, pl, mask, b0, n);
    // S = Q K^T, then P = exp(scale S + mask - lse) from the saved lse.
    forEachRun(pl, b0, n, [&](int64_t e0, int64_t cnt) {
      gemmOf(gemm, t, DType::F32, false, true, tq, tk, d, cnt,
             operand(Q, pl, e0, tq, d, 0), operand(K, pl, e0, tk, d, 1),
             scratch(S, DType::F32, pl, e0 - b0), a.stream);
    });
    attentionRows(rows, S, P, static_cast<int>(t), L.f32(), true, a.stream);
    forEachRun(pl, b0, n, [&](int64_t e0, int64_t cnt) {
      Mat dout = operand(dO, pl, e0, tq, dv);
      // dV = P^T dO.
      gemmOf(gemm, t, dV.dtype, true, false, tk, dv, tq, cnt,
             scratch(P, t, pl, e0 - b0), dout, operand(dV, pl, e0, tk, dv, 2),
             a.stream);
      // dP = dO V^T (f32, over S).
      gemmOf(gemm, t, DType::F32, false, true, tq, tk, dv, cnt, dout,
             operand(V, pl, e0, tk, dv, 2), scratch(S, DType::F32, pl, e0 - b0),
             a.stream);
    });
    // dS = P (dP - rowsum(dO O)) scale, over P (the pass finds the rows of
    // dO and O).
    attentionGradRows(rows, S, P, static_cast<int>(t), dO.data, O.data,
                      static_cast<int>(O.dtype), dv, a.stream);
    // dQ = dS K, dK = dS^T Q.
    forEachRun(pl, b0, n, [&](int64_t e0, int64_t cnt) {
      Mat ds = scratch(P, t, pl, e0 - b0);
      gemmOf(gemm, t, dQ.dtype, false, false, tq, d, tk, cnt, ds,
             operand(K, pl, e0, tk, d, 1), operand(dQ, pl, e0, tq, d, 0),
             a.stream);
      gemmOf(gemm, t, dK.dtype, true, false, tk, d, tq, cnt, ds,
             operand(Q, pl, e0, tq, d, 0), operand(dK, pl, e0, tk, d, 1),
             a.stream);
    });
  }
}

static AttentionPlan planOfViews(const CudaArgs &a) {
  return planAttention(
      attentionDims(*a.in[0].shape, *a.in[1].shape, *a.in[2].shape,
                    abi::attrsOf<abi::AttentionAttrs>(a.instr)),
      a.in[0].dtype);
}

/// The tiled kernels' view of the instr, or nothing when the chunk loop
/// runs it.
static std::optional<AttentionTiles> tilesOf(const CudaArgs &a,
                                             const AttentionPlan &pl) {
  std::vector<DType> types;
  for (const TensorView &v : a.in)
    types.push_back(v.dtype);
  if (!useTiles(a.instr, pl, types))
    return std::nullopt;
  bool grad = abi::is(a.instr, abi::KernelId::AttentionGrad);
  AttentionTiles t;
  // 16-byte loads of whole rows (D is a multiple of 16 elements).
  for (size_t i = 0; i < (grad ? 6u : 3u); ++i)
    if (i != 3 && i != 4 && reinterpret_cast<uintptr_t>(a.in[i].data) % 16 != 0)
      throw Error("the tiled CUDA " + a.instr.kernel +
                  " kernel needs 16-byte aligned operands (input " +
                  std::to_string(i) + " is not)");
  // Fused QKV: k and v start inside the projection (16-byte aligned too: H * D
  // is a multiple of 16 elements).
  size_t es = dtypeSize(a.in[0].dtype);
  t.q = a.in[0].data;
  t.k = static_cast<const char *>(a.in[1].data) + pl.inputOffset(1) * es;
  t.v = static_cast<const char *>(a.in[2].data) + pl.inputOffset(2) * es;
  t.inputPitch = pl.inputPitch(pl.d);
  t.dtype = static_cast<int>(a.in[0].dtype);
  t.batch = pl.batch;
  t.tq = pl.tq;
  t.tk = pl.tk;
  t.heads = pl.heads;
  t.d = static_cast<int>(pl.d);
  AttentionRows r = rowsOf(
      a, pl, a.in.size() > (grad ? 6u : 3u) ? &a.in[grad ? 6 : 3] : nullptr, 0,
      pl.batch);
  t.mask = r.mask;
  t.mEntry = r.mEntry;
  t.mRow = r.mRow;
  t.mCol = r.mCol;
  t.causal = r.causal;
  t.scale = r.scale;
  if (grad) {
    t.o = a.in[3].data;
    t.oType = static_cast<int>(a.in[3].dtype);
    t.lse = static_cast<float *>(a.in[4].data);
    t.dout = a.in[5].data;
    // fused_qkv: the thirds of one gradient, rows inputPitch apart.
    bool fused = pl.fusedQkv;
    const TensorView &dQ = a.out[0], &dK = a.out[fused ? 0 : 1],
                     &dV = a.out[fused ? 0 : 2];
    size_t gs = dtypeSize(dQ.dtype);
    t.dq = dQ.data;
    t.dk = static_cast<char *>(dK.data) + pl.inputOffset(1) * gs;
    t.dv = static_cast<char *>(dV.data) + pl.inputOffset(2) * gs;
    t.dqType = static_cast<int>(dQ.dtype);
    t.dkType = static_cast<int>(dK.dtype);
    t.dvType = static_cast<int>(dV.dtype);
    t.rowDot = static_cast<float *>(a.scratch);
    // The kernels add the gradients as they store them, in the operands'
    // 16-bit type (checkInstr: the gradients have q's type).
    if (attentionWritesColumnSums(a.instr))
      t.colParts = reinterpret_cast<float *>(static_cast<char *>(a.scratch) +
                                             sumsOffset(pl, true));
  } else {
    t.out = a.out[0].data;
    t.outType = static_cast<int>(a.out[0].dtype);
    t.lse = static_cast<float *>(a.out[1].data);
  }
  return t;
}

void launch_attention(const CudaArgs &a) {
  AttentionPlan pl = planOfViews(a);
  if (auto t = tilesOf(a, pl))
    attentionTiledForward(*t, a.stream);
  else
    runAttention(a, pl, attentionGemm(a));
}

void launch_attention_grad(const CudaArgs &a) {
  AttentionPlan pl = planOfViews(a);
  auto t = tilesOf(a, pl);
  if (t)
    attentionTiledBackward(*t, a.stream);
  else
    runAttentionGrad(a, pl, attentionGemm(a));
  if (!attentionWritesColumnSums(a.instr))
    return;
  // The tiled kernels wrote the slices' sums as they stored; the chunk
  // loop's GEMMs did not.
  float *parts = reinterpret_cast<float *>(static_cast<char *>(a.scratch) +
                                           sumsOffset(pl, t.has_value()));
  if (!t)
    attentionSliceSums(a.out[0].data, static_cast<int>(a.out[0].dtype),
                       pl.batch / pl.heads, pl.tq, attentionSumCols(pl), parts,
                       a.stream);
  attentionColumnTotals(parts, attentionSumSlices(pl), attentionSumCols(pl),
                        a.out[1].f32(), a.stream);
}

} // namespace tcc::rt::cuda

//===- CudaGemm.cpp - cuBLASLt plans and the matmul kernel ----------------===//
#include "runtime/cuda/CudaGemm.h"

#include "runtime/core/abi/GemmEpilogue.h"
#include "runtime/core/abi/LoopNest.h"
#include "runtime/cuda/CudaAttention.h"
#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/GemmAlgoCache.h"
#include "runtime/cuda/GemmAlgoPick.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace tcc::rt::cuda {

struct CudaGemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t x = nullptr, y = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  /// With autotuning: the heuristic's other answers, timed on the first
  /// call outside a graph capture, then cleared (`algo` the fastest).
  std::vector<cublasLtMatmulAlgo_t> candidates;
  /// The problem's name in the algorithm cache (with one).
  std::string cacheKey;
  ~Plan() {
    if (c)
      cublasLtMatrixLayoutDestroy(c);
    if (y)
      cublasLtMatrixLayoutDestroy(y);
    if (x)
      cublasLtMatrixLayoutDestroy(x);
    if (desc)
      cublasLtMatmulDescDestroy(desc);
  }
};

static_assert(sizeof(cublasLtMatmulAlgo_t) == sizeof(GemmAlgoCache::Algo),
              "the algorithm cache files cuBLASLt's 64-byte algorithms");

/// A plan's key as the algorithm cache names its problem: the numbers of
/// the key, comma-separated.
template <class Tuple> static std::string cacheKeyOf(const Tuple &key) {
  std::string s;
  std::apply(
      [&](const auto &...v) {
        ((s += (s.empty() ? "" : ",") + std::to_string(v)), ...);
      },
      key);
  return s;
}

/// The scope of this process's GPU and cuBLASLt in the algorithm cache.
static std::string algoCacheScope() {
  int dev = 0;
  cudaDeviceProp prop{};
  TCC_CUDA_CHECK(cudaGetDevice(&dev));
  TCC_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  return std::string(prop.name) + " sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", cuBLASLt " +
         std::to_string(cublasLtGetVersion());
}

static cudaDataType_t cudaType(DType t) {
  switch (t) {
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F16:
    return CUDA_R_16F;
  default:
    return CUDA_R_32F;
  }
}

using Ep = CudaGemm::Epilogue;

static cublasLtEpilogue_t epilogueOf(Ep e) {
  switch (e) {
  case Ep::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case Ep::Relu:
    return CUBLASLT_EPILOGUE_RELU;
  case Ep::ReluBias:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case Ep::Gelu:
    return CUBLASLT_EPILOGUE_GELU;
  case Ep::GeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  case Ep::GeluAux:
    return CUBLASLT_EPILOGUE_GELU_AUX;
  case Ep::GeluAuxBias:
    return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  // Row-major operands are swapped in cuBLASLt's view (see the header):
  // our B is its A.
  case Ep::BgradLhs:
    return CUBLASLT_EPILOGUE_BGRADB;
  case Ep::BgradRhs:
    return CUBLASLT_EPILOGUE_BGRADA;
  case Ep::Dgelu:
    return CUBLASLT_EPILOGUE_DGELU;
  case Ep::DgeluBgrad:
    return CUBLASLT_EPILOGUE_DGELU_BGRAD;
  default:
    return CUBLASLT_EPILOGUE_DEFAULT;
  }
}

static bool hasBias(Ep e) {
  return e == Ep::Bias || e == Ep::ReluBias || e == Ep::GeluBias ||
         e == Ep::GeluAuxBias;
}
static bool hasBiasGrad(Ep e) {
  return e == Ep::BgradLhs || e == Ep::BgradRhs || e == Ep::DgeluBgrad;
}
static bool hasAux(Ep e) {
  return e == Ep::GeluAux || e == Ep::GeluAuxBias || e == Ep::Dgelu ||
         e == Ep::DgeluBgrad;
}

/// The largest power of two (up to 256) the address is a multiple of:
/// cuBLASLt's kernels may assume the alignment the plan was made for.
static int alignmentOf(const void *p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  int align = 256;
  while (align > 1 && a % align != 0)
    align /= 2;
  return align;
}

bool CudaGemm::supports(DType a, DType b, DType c) {
  if (a != b || a == DType::I64 || c == DType::I64)
    return false;
  return c == a || (isHalfDType(a) && c == DType::F32);
}

int gemmAutotuneCandidates(const char *value) {
  if (!value || !*value)
    return 1;
  char *end = nullptr;
  long n = std::strtol(value, &end, 10);
  if (*end != '\0' || n < 0 || n > 16)
    throw Error(std::string("TCC_CUDA_GEMM_AUTOTUNE is '") + value +
                "'; it takes a count of cuBLASLt algorithms to time, 0 to 16 "
                "(0 or 1: the heuristic's first, untimed)");
  return n < 1 ? 1 : static_cast<int>(n);
}

CudaGemm::CudaGemm(cudaStream_t stream, bool tf32)
    : stream_(stream), tf32_(tf32), candidates_(gemmAutotuneCandidates(
                                        std::getenv("TCC_CUDA_GEMM_AUTOTUNE"))),
      margin_(
          gemmAutotuneMargin(std::getenv("TCC_CUDA_GEMM_AUTOTUNE_MARGIN"))) {
  if (auto path =
          gemmAlgoCachePath(std::getenv("TCC_CUDA_GEMM_AUTOTUNE_CACHE")))
    algoCache_ = std::make_unique<GemmAlgoCache>(*path, algoCacheScope());
  cublasLtHandle_t h = nullptr;
  TCC_CUBLAS_CHECK(cublasLtCreate(&h));
  handle_ = h;
  cudaError_t e = cudaMalloc(&workspace_, kWorkspaceBytes);
  if (e != cudaSuccess) {
    cublasLtDestroy(h);
    TCC_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes)); // throws
  }
}

CudaGemm::~CudaGemm() {
  plans_.clear();
  if (workspace_)
    cudaFree(workspace_);
  if (handle_)
    cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

/// A column-major layout, batched when `batch` > 1.
static cublasLtMatrixLayout_t layout(cudaDataType_t t, int64_t rows,
                                     int64_t cols, int64_t ld, int64_t batch,
                                     int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  TCC_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, t, rows, cols, ld));
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    cublasStatus_t s = cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
    if (s == CUBLAS_STATUS_SUCCESS)
      s = cublasLtMatrixLayoutSetAttribute(
          l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
          sizeof stride);
    if (s != CUBLAS_STATUS_SUCCESS) {
      cublasLtMatrixLayoutDestroy(l);
      TCC_CUBLAS_CHECK(s);
    }
  }
  return l;
}

CudaGemm::Plan *CudaGemm::plan(const Problem &p, Epilogue ep, DType biasType,
                               int alignA, int alignB, int alignC,
                               int alignBias, int alignAux) {
  // Explicit packed leading dims share the plan of 0.
  Lds ld = ldOf(p);
  Key key{static_cast<int>(p.ab),
          static_cast<int>(p.c),
          p.transA,
          p.transB,
          p.m,
          p.n,
          p.k,
          p.batch,
          p.strideA,
          p.strideB,
          p.strideC,
          ld.a,
          ld.b,
          ld.c,
          static_cast<int>(ep),
          static_cast<int>(biasType),
          alignA,
          alignB,
          alignC,
          alignBias,
          alignAux};
  auto it = plans_.find(key);
  if (it != plans_.end())
    return it->second.get();
  // An epilogue cuBLASLt cannot run is remembered as a null plan: the
  // caller falls back. The aux matrix's leading dimension (C's) must be a
  // multiple of 8.
  bool epilogue = ep != Epilogue::None;
  if (epilogue && hasAux(ep) && ld.c % 8 != 0) {
    plans_.emplace(key, nullptr);
    return nullptr;
  }

  auto pl = std::make_unique<Plan>();
  bool f32 = p.ab == DType::F32 && p.c == DType::F32;
  cublasComputeType_t compute =
      f32 && tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  TCC_CUBLAS_CHECK(cublasLtMatmulDescCreate(&pl->desc, compute, CUDA_R_32F));
  // Column-major view (see the header): cuBLASLt's A is our B, its B our A.
  cublasOperation_t opX = p.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opY = p.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  TCC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      pl->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opX, sizeof opX));
  TCC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
      pl->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opY, sizeof opY));
  // Epilogue attributes: a refusal here means "not for this problem".
  cublasLtEpilogue_t e = epilogueOf(ep);
  cublasStatus_t s = cublasLtMatmulDescSetAttribute(
      pl->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e);
  if (s == CUBLAS_STATUS_SUCCESS && (hasBias(ep) || hasBiasGrad(ep))) {
    int32_t biasT = cudaType(biasType);
    s = cublasLtMatmulDescSetAttribute(
        pl->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasT, sizeof biasT);
    // The heuristic reads the pointers' alignment from their values.
    const void *fake =
        reinterpret_cast<const void *>(static_cast<uintptr_t>(alignBias));
    if (s == CUBLAS_STATUS_SUCCESS)
      s = cublasLtMatmulDescSetAttribute(
          pl->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &fake, sizeof fake);
  }
  if (s == CUBLAS_STATUS_SUCCESS && hasAux(ep)) {
    int64_t auxLd = ld.c; // C's layout: cuBLASLt's column-major D
    const void *fake =
        reinterpret_cast<const void *>(static_cast<uintptr_t>(alignAux));
    s = cublasLtMatmulDescSetAttribute(
        pl->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &auxLd, sizeof auxLd);
    if (s == CUBLAS_STATUS_SUCCESS)
      s = cublasLtMatmulDescSetAttribute(
          pl->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &fake,
          sizeof fake);
  }
  if (s != CUBLAS_STATUS_SUCCESS) {
    plans_.emplace(key, nullptr);
    return nullptr;
  }

  cudaDataType_t tab = cudaType(p.ab), tc = cudaType(p.c);
  // A row-major ld is the column-major one of the transposed view.
  pl->x = p.transB ? layout(tab, p.k, p.n, ld.b, p.batch, p.strideB)
                   : layout(tab, p.n, p.k, ld.b, p.batch, p.strideB);
  pl->y = p.transA ? layout(tab, p.m, p.k, ld.a, p.batch, p.strideA)
                   : layout(tab, p.k, p.m, ld.a, p.batch, p.strideA);
  pl->c = layout(tc, p.n, p.m, ld.c, p.batch, p.strideC);

  cublasLtMatmulPreference_t pref = nullptr;
  TCC_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  std::vector<cublasLtMatmulHeuristicResult_t> results(candidates_);
  int found = 0;
  uint64_t ws = static_cast<uint64_t>(kWorkspaceBytes);
  uint32_t alignX = alignB, alignY = alignA, alignD = alignC;
  s = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  struct {
    cublasLtMatmulPreferenceAttributes_t attr;
    uint32_t *value;
  } aligns[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignX},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignY},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignD},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignD}};
  for (auto &al : aligns)
    if (s == CUBLAS_STATUS_SUCCESS)
      s = cublasLtMatmulPreferenceSetAttribute(pref, al.attr, al.value,
                                               sizeof(uint32_t));
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulAlgoGetHeuristic(
        static_cast<cublasLtHandle_t>(handle_), pl->desc, pl->x, pl->y, pl->c,
        pl->c, pref, candidates_, results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (epilogue && (s != CUBLAS_STATUS_SUCCESS || found == 0)) {
    plans_.emplace(key, nullptr);
    return nullptr;
  }
  TCC_CUBLAS_CHECK(s);
  if (found == 0)
    throw Error(std::string("cuBLASLt has no algorithm for a ") +
                dtypeName(p.ab) + " GEMM " + std::to_string(p.m) + "x" +
                std::to_string(p.n) + "x" + std::to_string(p.k) +
                (p.batch > 1 ? " batch " + std::to_string(p.batch) : "") +
                " -> " + dtypeName(p.c));
  pl->algo = results[0].algo;
  for (int i = 1; i < found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS)
      pl->candidates.push_back(results[i].algo);
  if (!pl->candidates.empty())
    pl->candidates.insert(pl->candidates.begin(), pl->algo);
  // A pick an earlier run recorded, if cuBLASLt still takes it for this
  // problem: used untimed.
  if (algoCache_) {
    pl->cacheKey = cacheKeyOf(key);
    if (auto hit = algoCache_->find(pl->cacheKey)) {
      cublasLtMatmulAlgo_t algo;
      std::memcpy(&algo, hit->data(), sizeof algo);
      cublasLtMatmulHeuristicResult_t check{};
      if (cublasLtMatmulAlgoCheck(static_cast<cublasLtHandle_t>(handle_),
                                  pl->desc, pl->x, pl->y, pl->c, pl->c, &algo,
                                  &check) == CUBLAS_STATUS_SUCCESS &&
          check.workspaceSize <= static_cast<size_t>(kWorkspaceBytes)) {
        pl->algo = algo;
        pl->candidates.clear();
      }
    }
  }
  Plan *ref = pl.get();
  plans_.emplace(key, std::move(pl));
  return ref;
}

int CudaGemm::run(const Plan &pl, const void *algo, const void *a,
                  const void *b, void *c) {
  const float alpha = 1.0f, beta = 0.0f;
  return cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), pl.desc, &alpha,
                        b, pl.x, a, pl.y, &beta, c, pl.c, c, pl.c,
                        static_cast<const cublasLtMatmulAlgo_t *>(algo),
                        workspace_, kWorkspaceBytes, stream_);
}

// Each candidate once to warm up, then kGemmAutotuneRounds rounds in which
// each runs once in turn, every run between two cudaEvents; pickTimedAlgo
// (GemmAlgoPick.h) keeps the heuristic's first answer unless another's
// median run is shorter by more than the margin. Every run writes the same
// outputs from the same inputs (beta 0: C, the bias gradient and the GELU
// input are written, never read), so the call's result is that of the
// kept algorithm alone. Not while the stream is being captured into a
// graph: events cannot be waited on there, and the plan stays untuned
// until an uncaptured call (the graph cache runs a step uncaptured first).
void CudaGemm::autotune(Plan &pl, const void *a, const void *b, void *c) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  TCC_CUDA_CHECK(cudaStreamIsCapturing(stream_, &capture));
  if (capture != cudaStreamCaptureStatusNone)
    return;
  const size_t n = pl.candidates.size();
  // Offered but refused at the warm-up: not a candidate.
  std::vector<bool> runs(n);
  for (size_t i = 0; i < n; ++i)
    runs[i] = run(pl, &pl.candidates[i], a, b, c) == CUBLAS_STATUS_SUCCESS;
  // One event before the first timed run and one after each.
  struct Events {
    std::vector<cudaEvent_t> list;
    ~Events() {
      for (cudaEvent_t e : list)
        cudaEventDestroy(e);
    }
  } events;
  size_t live = static_cast<size_t>(std::count(runs.begin(), runs.end(), true));
  cudaError_t e = cudaSuccess;
  for (size_t i = 0; i < 1 + kGemmAutotuneRounds * live && e == cudaSuccess;
       ++i) {
    cudaEvent_t ev = nullptr;
    e = cudaEventCreate(&ev);
    if (e == cudaSuccess)
      events.list.push_back(ev);
  }
  TCC_CUDA_CHECK(e);
  // Timed run k (candidate, whether it ran) lies between events k and k + 1.
  std::vector<std::pair<size_t, bool>> timed;
  e = cudaEventRecord(events.list[0], stream_);
  for (int r = 0; r < kGemmAutotuneRounds && e == cudaSuccess; ++r)
    for (size_t i = 0; i < n && e == cudaSuccess; ++i) {
      if (!runs[i])
        continue;
      timed.push_back(
          {i, run(pl, &pl.candidates[i], a, b, c) == CUBLAS_STATUS_SUCCESS});
      e = cudaEventRecord(events.list[timed.size()], stream_);
    }
  if (e == cudaSuccess)
    e = cudaEventSynchronize(events.list[timed.size()]);
  TCC_CUDA_CHECK(e);
  std::vector<std::vector<float>> ms(n);
  for (size_t k = 0; k < timed.size(); ++k) {
    float t = 0.0f;
    TCC_CUDA_CHECK(
        cudaEventElapsedTime(&t, events.list[k], events.list[k + 1]));
    ms[timed[k].first].push_back(timed[k].second ? t : -1.0f);
  }
  std::optional<size_t> pick = pickTimedAlgo(ms, margin_);
  if (pick)
    pl.algo = pl.candidates[*pick];
  pl.candidates.clear();
  if (algoCache_ && pick) {
    GemmAlgoCache::Algo words;
    std::memcpy(words.data(), &pl.algo, sizeof words);
    algoCache_->store(pl.cacheKey, words);
  }
}

static void checkProblem(const CudaGemm::Problem &p) {
  if (p.m < 1 || p.n < 1 || p.k < 1 || p.batch < 1 || p.batch > INT32_MAX)
    throw Error("GEMM " + std::to_string(p.m) + "x" + std::to_string(p.n) +
                "x" + std::to_string(p.k) + " batch " +
                std::to_string(p.batch) + " is outside what cuBLASLt takes");
  // Rows that would overlap: name the problem, not a cuBLASLt status.
  CudaGemm::Lds ld = CudaGemm::ldOf(p);
  if (ld.a < (p.transA ? p.m : p.k) || ld.b < (p.transB ? p.k : p.n) ||
      ld.c < p.n)
    throw Error("GEMM " + std::to_string(p.m) + "x" + std::to_string(p.n) +
                "x" + std::to_string(p.k) + " with leading dims " +
                std::to_string(ld.a) + ", " + std::to_string(ld.b) + ", " +
                std::to_string(ld.c) + " shorter than its rows");
}

bool CudaGemm::tryGemm(const Problem &p, const void *a, const void *b, void *c,
                       Epilogue ep, const EpilogueArgs &args) {
  if (ep != Epilogue::None && !epilogues_)
    return false;
  return enqueue(p, a, b, c, ep, args);
}

bool CudaGemm::enqueue(const Problem &p, const void *a, const void *b, void *c,
                       Epilogue ep, const EpilogueArgs &args) {
  checkProblem(p);
  // Batched epilogues would need batch strides for the vectors; the
  // compiler only makes row GEMMs (the batch folded into M).
  if (ep != Epilogue::None && p.batch != 1)
    return false;
  const void *biasPtr = hasBias(ep)       ? args.bias
                        : hasBiasGrad(ep) ? args.biasGrad
                                          : nullptr;
  if ((hasBias(ep) || hasBiasGrad(ep)) && !biasPtr)
    throw Error("a GEMM epilogue with a bias or bias gradient needs its "
                "vector");
  if (hasAux(ep) && !args.aux)
    throw Error("a GELU GEMM epilogue needs its pre-activation matrix");
  Plan *pl = plan(p, ep, args.biasType, alignmentOf(a), alignmentOf(b),
                  alignmentOf(c), biasPtr ? alignmentOf(biasPtr) : 0,
                  hasAux(ep) ? alignmentOf(args.aux) : 0);
  if (!pl)
    return false;
  if (biasPtr)
    TCC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        pl->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPtr, sizeof biasPtr));
  if (hasAux(ep))
    TCC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
        pl->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &args.aux,
        sizeof args.aux));
  if (!pl->candidates.empty())
    autotune(*pl, a, b, c);
  auto s = static_cast<cublasStatus_t>(run(*pl, &pl->algo, a, b, c));
  // An epilogue the heuristic offered but the call refuses (checked before
  // anything is launched): remember the refusal and let the caller fall
  // back.
  if (ep != Epilogue::None &&
      (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE)) {
    for (auto &[key, plan] : plans_)
      if (plan.get() == pl)
        plan.reset();
    return false;
  }
  TCC_CUBLAS_CHECK(s);
  return true;
}

void CudaGemm::gemm(const Problem &p, const void *a, const void *b, void *c,
                    Epilogue ep, const void *bias) {
  if (hasBias(ep) && !bias)
    throw Error("a GEMM epilogue with a bias needs the bias");
  EpilogueArgs args;
  args.bias = bias;
  args.biasType = p.c;
  if (!enqueue(p, a, b, c, ep, args))
    throw Error(std::string("cuBLASLt has no algorithm for a ") +
                dtypeName(p.ab) + " GEMM " + std::to_string(p.m) + "x" +
                std::to_string(p.n) + "x" + std::to_string(p.k) +
                " with epilogue " + std::to_string(static_cast<int>(ep)));
}

static std::vector<int64_t> batchShape(const std::vector<int64_t> &shape) {
  return {shape.begin(), shape.end() - 2};
}

void CudaGemm::matmul(const TensorView &A, const TensorView &B,
                      const TensorView &C, bool transA, bool transB) {
  Problem p;
  p.ab = A.dtype;
  p.c = C.dtype;
  p.transA = transA;
  p.transB = transB;
  p.m = C.dim(C.rank() - 2);
  p.n = C.dim(C.rank() - 1);
  p.k = transA ? A.dim(A.rank() - 2) : A.dim(A.rank() - 1);
  if (C.numel == 0)
    return;
  if (p.k == 0) { // the empty sum is zero (all-zero bits in every type)
    TCC_CUDA_CHECK(
        cudaMemsetAsync(C.data, 0, C.numel * dtypeSize(C.dtype), stream_));
    return;
  }
  int64_t aMat = p.m * p.k, bMat = p.k * p.n, cMat = p.m * p.n;
  int64_t batchA = A.numel / aMat, batchB = B.numel / bMat,
          batchC = C.numel / cMat;
  if (batchC == 1)
    return gemm(p, A.data, B.data, C.data);
  // A shared B and a non-transposed A: the batch folds into M.
  if (batchB == 1 && !transA && batchA == batchC) {
    p.m *= batchC;
    return gemm(p, A.data, B.data, C.data);
  }
  std::vector<int64_t> cb = batchShape(*C.shape);
  abi::LoopNest<3> nest(
      cb, {abi::contiguousStrides(cb),
           abi::broadcastStrides(batchShape(*A.shape), cb.size()),
           abi::broadcastStrides(batchShape(*B.shape), cb.size())});
  const auto &st = nest.innerStrides();
  p.batch = nest.innerDim();
  p.strideC = st[0] * cMat;
  p.strideA = st[1] * aMat;
  p.strideB = st[2] * bMat;
  size_t ea = dtypeSize(A.dtype), ec = dtypeSize(C.dtype);
  const char *a = static_cast<const char *>(A.data);
  const char *b = static_cast<const char *>(B.data);
  char *c = static_cast<char *>(C.data);
  nest.forEachOuter(1, [&](const std::array<int64_t, 3> &off) {
    gemm(p, a + off[1] * aMat * ea, b + off[2] * bMat * ea,
         c + off[0] * cMat * ec);
  });
}

int64_t prepare_matmul(const Instr &in, const std::vector<TensorInfo> &t) {
  DType a = t[in.inputs[0]].dtype, b = t[in.inputs[1]].dtype,
        c = t[in.outputs[0]].dtype;
  if (!CudaGemm::supports(a, b, c))
    throw Error(std::string("no cuBLASLt GEMM for A ") + dtypeName(a) + ", B " +
                dtypeName(b) + ", C " + dtypeName(c) +
                " (A and B must share f32, bf16 or f16; C theirs, or f32)");
  return 0;
}

// The attention chunk loops' GEMMs (CudaAttention.cpp): here, so the
// emulator tests, which run those loops with a host GEMM, need no cuBLASLt.
AttentionGemm attentionGemm(const CudaArgs &a) {
  CudaGemm *g = a.gemm;
  return [g](const CudaGemm::Problem &p, const void *x, const void *y,
             void *c) { g->gemm(p, x, y, c); };
}

void launch_matmul(const CudaArgs &a) {
  const abi::MatmulAttrs at = abi::attrs<abi::KernelId::Matmul>(a.instr);
  a.gemm->matmul(a.in[0], a.in[1], a.out[0], at.transA, at.transB);
}

/// Setting `name`'s value: unset, empty or 'split' (true) or 'fused'.
static bool splitOrFused(const char *name, const char *value) {
  if (!value || !*value || std::string(value) == "split")
    return true;
  if (std::string(value) == "fused")
    return false;
  throw Error(std::string(name) + " is '" + value +
              "'; it takes 'split' or 'fused'");
}

bool dgeluBgradSplit(const char *value) {
  return splitOrFused("TCC_CUDA_DGELU_BGRAD", value);
}

/// The CudaGemm epilogue of a matmul_epilogue code.
static Ep gemmEpilogueFor(const GemmEpilogueInfo &e) {
  if (e.act == GemmAct::DgeluTanh)
    return e.bgrad == GemmBiasGrad::Out ? Ep::DgeluBgrad : Ep::Dgelu;
  if (e.bgrad == GemmBiasGrad::Lhs)
    return Ep::BgradLhs;
  if (e.bgrad == GemmBiasGrad::Rhs)
    return Ep::BgradRhs;
  if (e.act == GemmAct::Relu)
    return e.bias ? Ep::ReluBias : Ep::Relu;
  if (e.act == GemmAct::GeluTanh) {
    if (e.preactOut)
      return e.bias ? Ep::GeluAuxBias : Ep::GeluAux;
    return e.bias ? Ep::GeluBias : Ep::Gelu;
  }
  return Ep::Bias;
}

// One cuBLASLt call with the epilogue; else a plain GEMM and the fallback.
// The forward and dgelu forms are row GEMMs (A's leading dims fold into
// M, B 2-D), the bias-gradient forms plain 2-D ones (checkInstr).
void launch_matmul_epilogue(const CudaArgs &a) {
  const abi::MatmulEpilogueAttrs at =
      abi::attrs<abi::KernelId::MatmulEpilogue>(a.instr);
  const GemmEpilogueInfo &e = *gemmEpilogueByCode(at.epilogue);
  const TensorView &A = a.in[0], &B = a.in[1], &D = a.out[0];
  bool ta = at.transA, tb = at.transB;
  CudaGemm::Problem p;
  p.ab = A.dtype;
  p.c = D.dtype;
  p.transA = ta;
  p.transB = tb;
  p.n = D.dim(D.rank() - 1);
  p.m = p.n ? D.numel / p.n : 0;
  p.k = ta ? A.dim(0) : A.dim(A.rank() - 1);
  if (D.numel > 0 && p.k > 0) {
    CudaGemm::EpilogueArgs args;
    args.biasType = D.dtype;
    if (e.bias)
      args.bias = a.in[2].data;
    if (e.act == GemmAct::DgeluTanh)
      args.aux = a.in[2].data;
    if (e.preactOut)
      args.aux = a.out[1].data;
    // cuBLASLt's fused DGELU_BGRAD runs far below the plain GEMM's rate,
    // and BGRADA / BGRADB keep it from splitting a weight gradient along K;
    // a plain GEMM then our column sum is faster for both
    // (benchmarks/results/design-measurements.md).
    // TCC_CUDA_DGELU_BGRAD / TCC_CUDA_BGRAD=fused select the fused forms;
    // the split BGRADA / BGRADB is the fallback below (their forms have no
    // bias or activation: a plain GEMM, then the bias gradient).
    static const bool splitDgelu =
        dgeluBgradSplit(std::getenv("TCC_CUDA_DGELU_BGRAD"));
    const BiasGradWay bgradWay = biasGradWayOfEnvironment();
    Ep ep = gemmEpilogueFor(e);
    bool split = ep == Ep::DgeluBgrad && splitDgelu;
    bool weightGrad = ep == Ep::BgradLhs || ep == Ep::BgradRhs;
    // Where the summed operand is much larger than the rest (GPT-2's LM
    // head), the GEMM sums it: a line of ones (CudaGemmEpilogue.cpp).
    if (weightGrad &&
        runByOnesLine(a, [&](const TensorView &x, const TensorView &y,
                             const TensorView &z, bool tx,
                             bool ty) { a.gemm->matmul(x, y, z, tx, ty); }))
      return;
    bool plainThenSum = weightGrad && bgradWay != BiasGradWay::Fused;
    if (e.bgrad != GemmBiasGrad::None && !split) {
      args.biasGrad = a.out[1].data;
      args.biasType = a.out[1].dtype;
    }
    if (!plainThenSum && a.gemm->tryGemm(p, A.data, B.data, D.data,
                                         split ? Ep::Dgelu : ep, args)) {
      if (split)
        epilogueBiasGrad(a);
      return;
    }
  }
  a.gemm->matmul(A, B, D, ta, tb);
  epilogueFallback(a);
}

} // namespace tcc::rt::cuda

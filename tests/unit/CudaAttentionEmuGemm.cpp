//===- CudaAttentionEmuGemm.cpp - attention's emulated GEMM and loops -----===//
//
// The host GEMM that stands in for cuBLASLt in the emulated attention
// (attentionGemm, defined here for the whole emulator binary): f32
// accumulation, rows read and written at the problem's leading dims, every
// scratch operand checked 256-byte aligned and every row inside an operand;
// and runLoops, which runs a program's attention instrs through
// runtime/cuda/CudaAttention.cpp's chunk loops on it.
//
//===----------------------------------------------------------------------===//
#include "CudaAttentionEmu.h"
#include "CudaTestUtil.h"
#include "KernelTestUtil.h"

#include "runtime/cuda/CudaAttention.h"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>

using namespace tcc::rt;
using namespace tcc::rt::test;
using cuda::AttentionPlan;
using cuda::AttentionRows;

namespace {

/// The scratch of the current chunk-loop test: GEMM operands inside it
/// must be 256-byte aligned, and so must the batch strides.
const char *gScratchBegin = nullptr, *gScratchEnd = nullptr;

void expectScratchAligned(const void *p, int64_t strideBytes, int64_t batch) {
  const char *c = static_cast<const char *>(p);
  if (c < gScratchBegin || c >= gScratchEnd)
    return;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 256, 0u) << "scratch operand";
  if (batch > 1) {
    EXPECT_EQ(strideBytes % 256, 0) << "scratch batch stride";
  }
}

/// The tensors and scratch of the current chunk-loop test: a GEMM row
/// outside all of them is a bad offset (an error, not a crash).
std::vector<std::pair<const char *, const char *>> gBuffers;

void checkInside(const char *p, int64_t bytes) {
  if (gBuffers.empty())
    return;
  for (auto [begin, end] : gBuffers)
    if (p >= begin && p + bytes <= end)
      return;
  throw Error("a GEMM row outside every operand");
}

/// Widens `rows` rows of `cols` elements, `ld` apart, into `to` (packed).
void widenRows(const void *from, DType t, int64_t rows, int64_t cols,
               int64_t ld, float *to) {
  size_t es = dtypeSize(t);
  for (int64_t r = 0; r < rows; ++r) {
    const char *row = static_cast<const char *>(from) + r * ld * es;
    checkInside(row, cols * (int64_t)es);
    widenToF32(row, t, to + r * cols, cols);
  }
}

/// C = op(A) op(B) per batch entry, f32 accumulation, C rounded once: what
/// cuBLASLt computes with CUBLAS_COMPUTE_32F. Rows are read and written
/// at the problem's leading dims, and nothing between them is touched.
void hostGemm(const cuda::CudaGemm::Problem &p, const void *a, const void *b,
              void *c) {
  if (p.m < 1 || p.n < 1 || p.k < 1 || p.batch < 1)
    throw Error("GEMM with an empty dimension (CudaGemm::gemm needs >= 1)");
  cuda::CudaGemm::Lds ld = cuda::CudaGemm::ldOf(p);
  int64_t rowsA = p.transA ? p.k : p.m, colsA = p.transA ? p.m : p.k;
  int64_t rowsB = p.transB ? p.n : p.k, colsB = p.transB ? p.k : p.n;
  if (ld.a < colsA || ld.b < colsB || ld.c < p.n)
    throw Error("GEMM leading dims shorter than their rows");
  size_t ea = dtypeSize(p.ab), ec = dtypeSize(p.c);
  expectScratchAligned(a, p.strideA * (int64_t)ea, p.batch);
  expectScratchAligned(b, p.strideB * (int64_t)ea, p.batch);
  expectScratchAligned(c, p.strideC * (int64_t)ec, p.batch);
  std::vector<float> A(p.m * p.k), B(p.k * p.n), C(p.m * p.n);
  for (int64_t e = 0; e < p.batch; ++e) {
    widenRows(static_cast<const char *>(a) + e * p.strideA * ea, p.ab, rowsA,
              colsA, ld.a, A.data());
    widenRows(static_cast<const char *>(b) + e * p.strideB * ea, p.ab, rowsB,
              colsB, ld.b, B.data());
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        float acc = 0.0f;
        for (int64_t k = 0; k < p.k; ++k)
          acc += (p.transA ? A[k * p.m + i] : A[i * p.k + k]) *
                 (p.transB ? B[j * p.k + k] : B[k * p.n + j]);
        C[i * p.n + j] = acc;
      }
    for (int64_t i = 0; i < p.m; ++i) {
      char *row = static_cast<char *>(c) + (e * p.strideC + i * ld.c) * ec;
      checkInside(row, p.n * (int64_t)ec);
      narrowFromF32(C.data() + i * p.n, p.c, row, p.n);
    }
  }
}

} // namespace

namespace tcc::rt::cuda {
AttentionGemm attentionGemm(const CudaArgs &) { return hostGemm; }
} // namespace tcc::rt::cuda

namespace tcc::rt::test {

std::vector<std::vector<uint8_t>>
runLoops(const OneProgram &prog, int64_t chunkCap, int64_t *chunks) {
  const Artifact &art = const_cast<OneProgram &>(prog).artifact();
  std::vector<std::vector<uint8_t>> store = prog.initial();
  for (const Instr &in : art.programs[0].instrs) {
    checkInstr(in, art.tensors);
    const cuda::CudaKernelDef *def = cuda::findCudaKernel(in.kernel);
    EXPECT_TRUE(def && def->prepare);
    cuda::CudaArgs args{in, {}, {}};
    for (int32_t id : in.inputs)
      args.in.push_back(TensorView{store[id].data(), art.tensors[id].dtype,
                                   &art.tensors[id].shape,
                                   art.tensors[id].numElements()});
    for (int32_t id : in.outputs)
      args.out.push_back(TensorView{store[id].data(), art.tensors[id].dtype,
                                    &art.tensors[id].shape,
                                    art.tensors[id].numElements()});
    const auto &sh = [&](int i) { return art.tensors[in.inputs[i]].shape; };
    AttentionPlan plan = cuda::planAttention(
        attentionDims(sh(0), sh(1), sh(2),
                      tcc::rt::abi::attrsOf<tcc::rt::abi::AttentionAttrs>(in)),
        art.tensors[in.inputs[0]].dtype, chunkCap);
    if (chunks && plan.chunk)
      *chunks = (plan.batch + plan.chunk - 1) / plan.chunk;
    // The registry's prepare asks for the uncapped plan's scratch: at
    // least what a capped one needs.
    EXPECT_GE(def->prepare(in, art.tensors), plan.scratchBytes);
    size_t bytes = static_cast<size_t>(plan.scratchBytes + 256);
    std::unique_ptr<char, decltype(&std::free)> scratch(
        static_cast<char *>(std::aligned_alloc(256, (bytes + 255) / 256 * 256)),
        &std::free);
    gScratchBegin = scratch.get();
    gScratchEnd = scratch.get() + plan.scratchBytes;
    gBuffers = {{gScratchBegin, gScratchEnd}};
    for (const auto &t : store)
      gBuffers.push_back({reinterpret_cast<const char *>(t.data()),
                          reinterpret_cast<const char *>(t.data()) + t.size()});
    args.scratch = scratch.get();
    if (in.kernel == "attention")
      cuda::runAttention(args, plan, cuda::attentionGemm(args));
    else
      cuda::runAttentionGrad(args, plan, cuda::attentionGemm(args));
    gScratchBegin = gScratchEnd = nullptr;
    gBuffers.clear();
  }
  return store;
}

} // namespace tcc::rt::test

//===- CudaKernelEmuTest.cpp - The CUDA kernels, emulated, vs the CPU -----===//
//
// Runs the conformance cases (KernelCases.h, the lists every backend runs
// in ConformanceTest.cpp) through the CUDA registry's launchers with the
// kernels compiled for the CPU (CudaKernelEmu.h): no GPU is needed, so CI
// checks the kernels' logic (indexing, broadcasting, reductions, barriers,
// error reporting). matmul (cuBLASLt) and fused (the artifact's cubin) are
// not emulated, and the kernels CUDA lacks (no launcher in its table) have
// nothing to emulate: their cases skip here. attention's GEMMs run on the
// host.
//
//===----------------------------------------------------------------------===//
#include "CudaTestUtil.h"

#include "KernelCasesAttention.h"
#include "KernelCasesOptim.h"
#include <cstring>

#include "runtime/core/abi/GemmEpilogue.h"
#include "runtime/cuda/CudaKernels.h"

using namespace tcc::rt;
using namespace tcc::rt::test;

// What the emulator cannot run: cuBLASLt and loaded cubins.
namespace tcc::rt::cuda {
int64_t prepare_matmul(const Instr &, const std::vector<TensorInfo> &) {
  throw Error("matmul is not emulated");
}
void launch_matmul(const CudaArgs &) { throw Error("matmul is not emulated"); }
// matmul_epilogue without cuBLASLt: the GEMM on the CPU kernel, then the
// real fallback (CudaGemmEpilogue.cpp) with emulated kernels, or, where the
// GPU sums a bias gradient by a line of ones, the line's real copies around
// the CPU's GEMM.
static void cpuGemm(const TensorView &A, const TensorView &B,
                    const TensorView &D, bool ta, bool tb) {
  std::vector<TensorInfo> infos;
  std::vector<void *> buffers;
  for (const TensorView *v : {&A, &B, &D}) {
    TensorInfo t;
    t.name = "t" + std::to_string(infos.size());
    t.dtype = v->dtype;
    t.shape = *v->shape;
    infos.push_back(t);
    buffers.push_back(v->data);
  }
  runKernel(Instr{"matmul", {0, 1}, {2}, {ta ? 1 : 0, tb ? 1 : 0}, {}}, infos,
            buffers);
}
void launch_matmul_epilogue(const CudaArgs &a) {
  if (runByOnesLine(a, cpuGemm))
    return;
  const abi::MatmulEpilogueAttrs at =
      abi::attrs<abi::KernelId::MatmulEpilogue>(a.instr);
  cpuGemm(a.in[0], a.in[1], a.out[0], at.transA, at.transB);
  epilogueFallback(a);
}
// attention / attention_grad run their real chunk loops and row kernels
// with a host GEMM (attentionGemm, CudaAttentionEmuTest.cpp).
} // namespace tcc::rt::cuda
cudaError_t cudaLaunchKernel(const void *, dim3, dim3, void **, size_t,
                             cudaStream_t) {
  return cudaErrorNotSupported;
}

namespace {

/// Every tensor's bytes after running the programs through the launchers
/// as data-parallel rank `rank` (CudaArgs::rank); `err` gets each instr's
/// four error words.
std::vector<std::vector<uint8_t>>
runEmulated(const OneProgram &prog, std::vector<long long> *err = nullptr,
            int64_t rank = 0) {
  const Artifact &a = const_cast<OneProgram &>(prog).artifact();
  std::vector<std::vector<uint8_t>> store = prog.initial();
  int64_t scratchBytes = 0;
  for (const Program &p : a.programs)
    for (const Instr &in : p.instrs) {
      checkInstr(in, a.tensors);
      const cuda::CudaKernelDef *def = cuda::findCudaKernel(in.kernel);
      if (!def)
        throw Error("no CUDA kernel for " + in.kernel);
      if (def->prepare)
        scratchBytes = std::max(scratchBytes, def->prepare(in, a.tensors));
    }
  std::vector<double> scratch(static_cast<size_t>(scratchBytes / 8 + 1));
  for (const Program &p : a.programs)
    for (const Instr &in : p.instrs) {
      std::vector<long long> words(4, 0);
      cuda::CudaArgs args{in, {}, {}};
      for (int32_t id : in.inputs)
        args.in.push_back(TensorView{store[id].data(), a.tensors[id].dtype,
                                     &a.tensors[id].shape,
                                     a.tensors[id].numElements()});
      for (int32_t id : in.outputs)
        args.out.push_back(TensorView{store[id].data(), a.tensors[id].dtype,
                                      &a.tensors[id].shape,
                                      a.tensors[id].numElements()});
      args.err = words.data();
      args.rank = rank;
      // No scratch where prepare asked for none, as in the session: a
      // kernel that uses scratch it did not ask for fails here.
      const cuda::CudaKernelDef *def = cuda::findCudaKernel(in.kernel);
      bool wants = def->prepare && def->prepare(in, a.tensors) > 0;
      args.scratch = wants ? scratch.data() : nullptr;
      args.smCount = 2; // small grids: the grid-stride loops do the rest
      def->launch(args);
      if (err)
        err->insert(err->end(), words.begin(), words.end());
      else
        EXPECT_EQ(words[3], 0) << in.kernel << " raised a data error";
    }
  return store;
}

class CudaKernelEmu : public ::testing::TestWithParam<std::string> {};

} // namespace

TEST_P(CudaKernelEmu, MatchesTheCpu) {
  const KernelCase &c = kernelCase(GetParam());
  std::string lacking;
  for (tcc::rt::abi::KernelId k : kernelsOf(c)) {
    if (k == tcc::rt::abi::KernelId::Matmul)
      GTEST_SKIP() << "matmul is cuBLASLt's, not emulated (the case runs on "
                      "a GPU in Conformance/BackendCase.*/cuda_*)";
    if (!cuda::findCudaKernel(tcc::rt::abi::name(k)))
      lacking +=
          (lacking.empty() ? "" : ", ") + std::string(tcc::rt::abi::name(k));
  }
  if (!lacking.empty())
    GTEST_SKIP() << "CUDA has no kernel for " << lacking;
  CaseScope scope(c);
  compareCase(c, runEmulated(c.prog));
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaKernelEmu,
                         ::testing::ValuesIn(kernelCaseNames()),
                         [](const ::testing::TestParamInfo<std::string> &i) {
                           return i.param;
                         });

// The tiled attention kernels' two warp shapes (16 and 32 rows a warp)
// agree bit for bit: every output sums the same products in the same order
// (steps of 64 keys or queries, each mma over the same k), and the steps a
// 128-row causal block walks past a 64-row one's end add exact zeros. Head
// dims where all three kernels, two or one take 32 rows.
TEST(CudaKernelEmuAttention, WarpShapesAgreeBitForBit) {
  OneProgram p;
  std::vector<int32_t> outs;
  DType t = DType::BF16;
  attentionPair(p, t, {1}, 150, 150, 64, 64, {}, true, outs);
  attentionPair(p, t, {1}, 140, 100, 80, 80, {}, true, outs);
  attentionPair(p, t, {1}, 70, 130, 96, 96, {70, 130}, false, outs);
  std::vector<std::vector<uint8_t>> got[2];
  for (int wide : {0, 1}) {
    AttentionWarpRowsScope rows(wide ? 32 : 16);
    got[wide] = runEmulated(p);
  }
  for (int32_t id : outs)
    EXPECT_EQ(got[0][id], got[1][id]) << "tensor " << p.info(id).name;
}

// The tiled attention kernels' two ways of copying tiles (cp.async by
// every thread, or tensor copies: TCC_CUDA_ATTENTION_COPY=tma) agree bit
// for bit: the tiles hold the same values, zeros past the ends included.
// Tails of tiles, causal with Tq < Tk (key tiles no query sees: the dK / dV
// blocks that take no step) and Tq > Tk, both layouts, q, k and v inside
// one fused projection, a mask, and Tq not a multiple of 4 (lse and D
// still come by cp.async).
TEST(CudaKernelEmuAttention, TileCopiesAgreeBitForBit) {
  OneProgram p;
  std::vector<int32_t> outs;
  DType t = DType::BF16;
  attentionPair(p, t, {1}, 150, 150, 64, 64, {}, true, outs);
  attentionPair(p, t, {2}, 30, 150, 32, 32, {}, true, outs);
  attentionPair(p, t, {1}, 130, 70, 128, 128, {}, true, outs);
  attentionPair(p, t, {}, 65, 65, 16, 16, {1, 65}, false, outs, 2);
  attentionPair(p, t, {2}, 70, 70, 64, 64, {}, true, outs, 3, true);
  attentionPair(p, t, {}, 33, 90, 96, 96, {2, 1, 90}, false, outs, 2);
  attentionPair(p, t, {1}, 67, 67, 80, 80, {}, true, outs);
  std::vector<std::vector<uint8_t>> got[2];
  for (int tma : {0, 1}) {
    AttentionCopiesScope copies(tma ? cuda::TileCopies::Tma
                                    : cuda::TileCopies::Async);
    got[tma] = runEmulated(p);
  }
  for (int32_t id : outs)
    EXPECT_EQ(got[0][id], got[1][id]) << "tensor " << p.info(id).name;
}

// Warpgroup products (TCC_CUDA_ATTENTION_MMA=wgmma) on swizzled tiles
// agree bit for bit with mma.sync on padded ones: the emulator sums each
// product in the same order, so any difference is a tile, descriptor,
// swizzle or fragment out of place. Head dim 64 (the one wgmma's kernels
// take): whole and partial tiles, causal with Tq < Tk and Tq > Tk, no
// mask and a mask, both layouts and one fused projection, bf16 and f16.
TEST(CudaKernelEmuAttention, WarpgroupProductsAgreeBitForBit) {
  for (DType t : {DType::BF16, DType::F16}) {
    OneProgram p;
    std::vector<int32_t> outs;
    attentionPair(p, t, {1}, 150, 150, 64, 64, {}, true, outs);
    attentionPair(p, t, {1}, 128, 128, 64, 64, {}, false, outs);
    attentionPair(p, t, {2}, 30, 150, 64, 64, {}, true, outs);
    attentionPair(p, t, {1}, 130, 70, 64, 64, {1, 130, 70}, true, outs);
    attentionPair(p, t, {}, 65, 65, 64, 64, {1, 65}, false, outs, 2);
    attentionPair(p, t, {2}, 70, 70, 64, 64, {}, true, outs, 3, true);
    std::vector<std::vector<uint8_t>> got[2];
    for (int wg : {0, 1}) {
      AttentionProductsScope products(wg ? cuda::TileProducts::Wgmma
                                         : cuda::TileProducts::Sync);
      got[wg] = runEmulated(p);
    }
    for (int32_t id : outs)
      EXPECT_EQ(got[0][id], got[1][id])
          << dtypeName(t) << " tensor " << p.info(id).name;
  }
}

// A fused QKV attention_grad's column sums (the projection's bias
// gradient) are, bit for bit, runtime/core/AttentionColumnSums.h's sums of
// the gradient the kernels wrote: added by the tiled kernels as they store
// each tile, in every way of copying and multiplying and with warps of 16
// and 32 rows, and by a pass over the gradient after the chunk loop (head
// dim 48). Slices with tails (70, 130 rows), whole ones (128), causal and
// masked, one outer index and several.
TEST(CudaKernelEmuAttention, ColumnSumsAddTheGradientInOrder) {
  struct Way {
    int rows;
    cuda::TileCopies copies;
    cuda::TileProducts products;
  };
  const Way ways[] = {{16, cuda::TileCopies::Async, cuda::TileProducts::Sync},
                      {32, cuda::TileCopies::Async, cuda::TileProducts::Sync},
                      {16, cuda::TileCopies::Tma, cuda::TileProducts::Sync},
                      {16, cuda::TileCopies::Tma, cuda::TileProducts::Wgmma}};
  for (const Way &w : ways) {
    SCOPED_TRACE("warp rows " + std::to_string(w.rows) + ", way " +
                 std::to_string(static_cast<int>(w.copies)) + "/" +
                 std::to_string(static_cast<int>(w.products)));
    AttentionWarpRowsScope rows(w.rows);
    AttentionCopiesScope copies(w.copies);
    AttentionProductsScope products(w.products);
    OneProgram p;
    std::vector<int32_t> outs;
    DType t = DType::BF16;
    attentionPair(p, t, {2}, 70, 70, 64, 64, {}, true, outs, 3, true, true);
    attentionPair(p, t, {}, 130, 130, 32, 32, {1, 130}, false, outs, 2, true,
                  true);
    attentionPair(p, t, {1}, 128, 128, 64, 64, {}, false, outs, 2, true, true);
    attentionPair(p, t, {3}, 40, 40, 48, 48, {}, true, outs, 2, true, true);
    std::vector<std::vector<uint8_t>> got = runEmulated(p);
    for (size_t i = 0; i + 3 < outs.size(); i += 4)
      expectColumnSumsInOrder(p, got, outs[i + 2], outs[i + 3]);
  }
}

// The multi-tensor AdamW launch over a table of three tensors equals three
// single updates on the CPU (the first also writes its bf16 copy).
// TCC_CUDA_BGRAD picks how the weight gradients' bias gradients run; a
// value it does not know is an error that names it and what it takes.
TEST(CudaKernelEmuGemm, BiasGradSetting) {
  EXPECT_EQ(cuda::biasGradWay(nullptr), cuda::BiasGradWay::Line);
  EXPECT_EQ(cuda::biasGradWay(""), cuda::BiasGradWay::Line);
  EXPECT_EQ(cuda::biasGradWay("line"), cuda::BiasGradWay::Line);
  EXPECT_EQ(cuda::biasGradWay("split"), cuda::BiasGradWay::Split);
  EXPECT_EQ(cuda::biasGradWay("fused"), cuda::BiasGradWay::Fused);
  try {
    cuda::biasGradWay("Split");
    ADD_FAILURE() << "no error for 'Split'";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("TCC_CUDA_BGRAD is 'Split'; it "
                                         "takes 'line', 'split' or 'fused'"),
              std::string::npos)
        << e.what();
  }
}

// The line of ones is taken where the summed operand outweighs what it
// copies: GPT-2's LM head at batch 64 (6.6 GB summed), not its qkv weight
// gradient (302 MB against a 101 MB copy of the other operand); never for
// another way, another epilogue, a D whose type the sums do not share, or
// a batched GEMM.
TEST(CudaKernelEmuGemm, OnesLineOnlyWhereItPays) {
  const int64_t lhs = gemmEpilogueByName("bgrad_lhs")->code,
                rhs = gemmEpilogueByName("bgrad_rhs")->code;
  auto line = [&](int64_t code, int64_t m, int64_t n, DType d, DType sums,
                  cuda::BiasGradWay way = cuda::BiasGradWay::Line) {
    const int64_t k = 65536;
    // The compiler's weight gradients: op(A) = A^T, op(B) = B.
    return cuda::onesLineFor(code, true, false, {k, m}, {k, n}, {m, n},
                             DType::BF16, d, sums, way);
  };
  auto head = line(lhs, 50304, 768, DType::F32, DType::F32);
  ASSERT_TRUE(head.has_value());
  EXPECT_TRUE(head->lhs);
  EXPECT_EQ(head->extra, 8);
  EXPECT_EQ(head->k, 65536);
  EXPECT_EQ(head->wRows, 65536); // B [k, n] gains columns
  EXPECT_EQ(head->wCols, 776);
  EXPECT_EQ(head->widenedBytes, 65536 * 776 * 2);
  EXPECT_EQ(head->productBytes, 50304 * 776 * 4);
  EXPECT_FALSE(line(lhs, 2304, 768, DType::F32, DType::F32).has_value());
  EXPECT_FALSE(
      line(lhs, 50304, 768, DType::F32, DType::F32, cuda::BiasGradWay::Split)
          .has_value());
  EXPECT_FALSE(
      line(lhs, 50304, 768, DType::F32, DType::F32, cuda::BiasGradWay::Fused)
          .has_value());
  EXPECT_FALSE(line(lhs, 50304, 768, DType::BF16, DType::F32).has_value());
  EXPECT_FALSE(line(gemmEpilogueByName("dgelu_tanh_bgrad")->code, 50304, 768,
                    DType::F32, DType::F32)
                   .has_value());
  // bgrad_rhs sums op(B): a wide B and a narrow A, which gains rows of
  // A^T, so columns of A as stored.
  auto r = cuda::onesLineFor(rhs, true, false, {65536, 20}, {65536, 50304},
                             {20, 50304}, DType::BF16, DType::BF16, DType::BF16,
                             cuda::BiasGradWay::Line);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->lhs);
  EXPECT_EQ(r->extra, 4); // 20 + 1 rounded up to 24
  EXPECT_EQ(r->wRows, 65536);
  EXPECT_EQ(r->wCols, 24);
  EXPECT_EQ(r->productBytes, 24 * 50304 * 2);
  EXPECT_FALSE(cuda::onesLineFor(lhs, true, false, {4, 65536, 50304},
                                 {4, 65536, 768}, {4, 50304, 768}, DType::BF16,
                                 DType::F32, DType::F32,
                                 cuda::BiasGradWay::Line)
                   .has_value());
}

// The line's copies refuse shapes that do not add exactly one of rows and
// columns, naming the copy and both shapes.
TEST(CudaKernelEmuGemm, OnesLineCopiesCheckTheirShapes) {
  std::vector<float> x(16), y(64);
  auto expectRefused = [](const std::function<void()> &f, const char *what) {
    try {
      f();
      ADD_FAILURE() << "no error: " << what;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
          << e.what();
    }
  };
  expectRefused(
      [&] {
        cuda::widenWithOnes(x.data(), y.data(), DType::F32, 4, 4, 8, 8, nullptr,
                            1);
      },
      "widenWithOnes: [8, 8] does not add rows or columns (one of them) to "
      "[4, 4]");
  expectRefused(
      [&] {
        cuda::splitOffLine(y.data(), x.data(), x.data(), DType::F32, 4, 4, 4, 4,
                           nullptr, 1);
      },
      "splitOffLine: [4, 4] does not add rows or columns (one of them) to "
      "[4, 4]");
  expectRefused(
      [&] {
        cuda::widenWithOnes(x.data(), y.data(), DType::I64, 4, 2, 4, 8, nullptr,
                            1);
      },
      "a line of ones takes f32, bf16 or f16, not i64");
}

TEST(CudaKernelEmuAdamW, MultiTensorLaunch) {
  std::vector<KernelCase> cases;
  optimizerCases(cases);
  const OneProgram &prog = cases[0].prog;
  const Artifact &a = const_cast<OneProgram &>(prog).artifact();
  std::vector<std::vector<uint8_t>> store = prog.initial();
  const auto &instrs = a.programs[0].instrs;
  std::vector<cuda::AdamEntry> entries;
  std::vector<cuda::AdamBlock> blocks;
  std::vector<void *> gpu;
  for (auto &s : store)
    gpu.push_back(s.data());
  for (int e = 0; e < 3; ++e) { // the three with the same hyper-parameters
    entries.push_back(cuda::adamEntry(instrs[e], a.tensors, gpu));
    int64_t n = entries.back().n;
    for (int64_t s = 0; s < n; s += cuda::kAdamChunk)
      blocks.push_back({e, s});
  }
  int32_t step = instrs[0].inputs[4], lr = instrs[0].inputs[5];
  cuda::launchAdamwMulti(
      entries.data(), blocks.data(), static_cast<int64_t>(blocks.size()),
      store[step].data(), DType::F32,
      reinterpret_cast<const float *>(store[lr].data()), {},
      tcc::rt::abi::attrs<tcc::rt::abi::KernelId::AdamwUpdate>(instrs[0]),
      nullptr);
  std::vector<std::vector<uint8_t>> cpu = prog.initial();
  std::vector<void *> buffers;
  for (auto &s : cpu)
    buffers.push_back(s.data());
  for (int e = 0; e < 3; ++e)
    runKernel(instrs[e], a.tensors, buffers);
  for (int e = 0; e < 3; ++e)
    for (int32_t id : instrs[e].outputs)
      expectClose(prog, cpu, store, id, 1e-6, 1e-7);
}

// With fp16 loss scaling the launch unscales every tensor's gradient, and
// a skipped step (finite 0) leaves every tensor and copy as it was.
TEST(CudaKernelEmuAdamW, MultiTensorLaunchUnscalesAndSkips) {
  for (int64_t ok : {1, 0}) {
    OneProgram p;
    int32_t step = p.floats(DType::F32, {}, {2.0f});
    int32_t lr = p.floats(DType::F32, {}, {1e-3f});
    int32_t inv = p.floats(DType::F32, {}, {1.0f / 4096});
    int32_t finite = p.i64({}, {ok});
    for (int64_t n : {5000, 700}) {
      int32_t w = p.random(DType::F32, {n});
      int32_t g = p.random(DType::F32, {n}, -4000.0f, 4000.0f);
      int32_t m = p.random(DType::F32, {n}, -0.1f, 0.1f);
      int32_t v = p.random(DType::F32, {n}, 0.0f, 0.1f);
      // The copy starts as the parameter's rounding, as the runtime keeps it.
      int32_t low = p.out(DType::BF16, {n});
      p.instr("cast", {w}, {low}, {0});
      p.instr("adamw_update", {w, g, m, v, step, lr, inv, finite},
              {w, m, v, low}, {0}, {0.9, 0.999, 1e-8, 0.01});
    }
    const Artifact &a = p.artifact();
    const auto &instrs = a.programs[0].instrs;
    std::vector<std::vector<uint8_t>> store = p.initial(), cpu = p.initial();
    std::vector<void *> gpu, buffers;
    for (auto &s : store)
      gpu.push_back(s.data());
    for (auto &s : cpu)
      buffers.push_back(s.data());
    std::vector<cuda::AdamEntry> entries;
    std::vector<cuda::AdamBlock> blocks;
    for (size_t i : {0, 2}) { // the casts run on the CPU: the initial copies
      runKernel(instrs[i], a.tensors, gpu);
      runKernel(instrs[i], a.tensors, buffers);
    }
    std::vector<std::vector<uint8_t>> before = store;
    for (int e : {1, 3}) {
      entries.push_back(cuda::adamEntry(instrs[e], a.tensors, gpu));
      for (int64_t s = 0; s < entries.back().n; s += cuda::kAdamChunk)
        blocks.push_back({static_cast<int>(entries.size() - 1), s});
    }
    cuda::launchAdamwMulti(
        entries.data(), blocks.data(), static_cast<int64_t>(blocks.size()),
        store[step].data(), DType::F32,
        reinterpret_cast<const float *>(store[lr].data()),
        cuda::adamScaling(instrs[1], gpu),
        tcc::rt::abi::attrs<tcc::rt::abi::KernelId::AdamwUpdate>(instrs[1]),
        nullptr);
    for (int e : {1, 3})
      runKernel(instrs[e], a.tensors, buffers);
    for (int e : {1, 3})
      for (int32_t id : instrs[e].outputs) {
        expectClose(p, cpu, store, id, 1e-6, 1e-7);
        if (!ok) {
          EXPECT_EQ(store[id], before[id]) << "tensor " << id;
        } else if (id != instrs[e].outputs[3]) {
          EXPECT_NE(store[id], before[id]) << "tensor " << id;
        }
      }
  }
}

// The launch reads the learning rate from memory (the train loop writes it
// between steps; a CUDA graph replays the launch as captured): a rate
// written into the tensor after the table was built is the one applied,
// as the CPU kernel applies it.
TEST(CudaKernelEmuAdamW, MultiTensorLaunchReadsTheLearningRate) {
  OneProgram p;
  int32_t step = p.floats(DType::F32, {}, {4.0f});
  int32_t lr = p.floats(DType::F32, {}, {1e-3f});
  for (int64_t n : {4500, 300}) {
    int32_t w = p.random(DType::F32, {n}), g = p.random(DType::F32, {n});
    int32_t m = p.random(DType::F32, {n}, -0.1f, 0.1f);
    int32_t v = p.random(DType::F32, {n}, 0.0f, 0.1f);
    p.instr("adamw_update", {w, g, m, v, step, lr}, {w, m, v}, {0},
            {0.9, 0.999, 1e-8, 0.1});
  }
  const Artifact &a = p.artifact();
  const auto &instrs = a.programs[0].instrs;
  std::vector<std::vector<float>> params;
  for (float rate : {1e-3f, 5e-2f}) {
    std::vector<std::vector<uint8_t>> store = p.initial(), cpu = p.initial();
    std::vector<void *> gpu, buffers;
    for (auto &s : store)
      gpu.push_back(s.data());
    for (auto &s : cpu)
      buffers.push_back(s.data());
    std::vector<cuda::AdamEntry> entries;
    std::vector<cuda::AdamBlock> blocks;
    for (int e = 0; e < 2; ++e) {
      entries.push_back(cuda::adamEntry(instrs[e], a.tensors, gpu));
      for (int64_t s = 0; s < entries.back().n; s += cuda::kAdamChunk)
        blocks.push_back({e, s});
    }
    std::memcpy(store[lr].data(), &rate, sizeof rate);
    std::memcpy(cpu[lr].data(), &rate, sizeof rate);
    cuda::launchAdamwMulti(
        entries.data(), blocks.data(), static_cast<int64_t>(blocks.size()),
        store[step].data(), DType::F32,
        reinterpret_cast<const float *>(store[lr].data()), {},
        tcc::rt::abi::attrs<tcc::rt::abi::KernelId::AdamwUpdate>(instrs[0]),
        nullptr);
    for (int e = 0; e < 2; ++e)
      runKernel(instrs[e], a.tensors, buffers);
    for (int e = 0; e < 2; ++e)
      for (int32_t id : instrs[e].outputs)
        expectClose(p, cpu, store, id, 1e-6, 1e-7);
    int32_t w = instrs[0].outputs[0];
    const float *f = reinterpret_cast<const float *>(store[w].data());
    params.emplace_back(f, f + 4500);
  }
  EXPECT_NE(params[0], params[1]);
}

// Data errors land in the instr's words as {position, value, bound, 1}.
TEST(CudaKernelEmuErrors, LabelsAndIndicesOutOfRange) {
  OneProgram p;
  int32_t logits = p.random(DType::F32, {3, 5});
  int32_t labels = p.i64({3}, {1, 7, 2});
  int32_t loss = p.out(DType::F32, {});
  p.instr("softmax_cross_entropy", {logits, labels}, {loss}, {-100}, {0.0});
  int32_t dloss = p.floats(DType::F32, {}, {1.0f});
  int32_t dlogits = p.out(DType::F32, {3, 5});
  p.instr("softmax_cross_entropy_grad", {dloss, logits, labels}, {dlogits},
          {-100}, {0.0});
  // The ignore_index, though outside [0, 5), is no error.
  int32_t ignored = p.i64({3}, {1, -100, 2});
  int32_t loss2 = p.out(DType::F32, {}), dlogits2 = p.out(DType::F32, {3, 5});
  p.instr("softmax_cross_entropy", {logits, ignored}, {loss2}, {-100}, {0.1});
  p.instr("softmax_cross_entropy_grad", {dloss, logits, ignored}, {dlogits2},
          {-100}, {0.1});
  int32_t table = p.random(DType::F32, {4, 3});
  int32_t idx = p.i64({2, 2}, {0, 1, -5, 2});
  int32_t y = p.out(DType::F32, {2, 2, 3});
  p.instr("gather", {table, idx}, {y}, {0});
  std::vector<long long> err;
  runEmulated(p, &err);
  ASSERT_EQ(err.size(), 20u);
  EXPECT_EQ(std::vector<long long>(err.begin(), err.begin() + 4),
            (std::vector<long long>{1, 7, 5, 1}));
  EXPECT_EQ(std::vector<long long>(err.begin() + 4, err.begin() + 8),
            (std::vector<long long>{1, 7, 5, 1}));
  EXPECT_EQ(err[8 + 3], 0) << "an ignored label raised an error";
  EXPECT_EQ(err[12 + 3], 0) << "an ignored label raised an error";
  EXPECT_EQ(std::vector<long long>(err.begin() + 16, err.end()),
            (std::vector<long long>{2, -5, 4, 1}));
}

// Data-parallel rank r numbers its dropout elements from r * n (CudaArgs::
// rank, a host argument): the CUDA kernel draws the CPU kernel's masks at
// every rank, bit for bit (DropoutRanksTest.cpp checks the CPU's against
// one process at N * B), and rank 1's differ from rank 0's.
TEST(CudaKernelEmuDropout, RanksDrawTheCpusMasks) {
  for (DType t : {DType::F32, DType::BF16}) {
    OneProgram p;
    int32_t x = p.random(t, {3, 333});
    int32_t step = p.i64({}, {12});
    int32_t y = p.out(t, {3, 333}), mask = p.out(t, {3, 333});
    p.instr("dropout", {x, step}, {y, mask}, {-5}, {0.3});
    std::vector<std::vector<uint8_t>> masks;
    for (int64_t rank : {0, 1, 2}) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " rank " + std::to_string(rank));
      std::vector<std::vector<uint8_t>> want = p.initial();
      std::vector<void *> buffers;
      for (auto &b : want)
        buffers.push_back(b.data());
      runKernel(p.artifact().programs[0].instrs[0], p.artifact().tensors,
                buffers, rank);
      std::vector<std::vector<uint8_t>> got = runEmulated(p, nullptr, rank);
      EXPECT_EQ(got[y], want[y]);
      EXPECT_EQ(got[mask], want[mask]);
      masks.push_back(got[mask]);
    }
    EXPECT_NE(masks[0], masks[1]);
    EXPECT_NE(masks[1], masks[2]);
  }
}

// tcc.random's CUDA kernel draws the CPU's values at every rank (both start
// at rank * n), uniform and normal.
TEST(CudaKernelEmuRandom, RanksDrawTheCpusValues) {
  for (int64_t normal : {0, 1}) {
    OneProgram p;
    int32_t step = p.i64({}, {4});
    int32_t y = p.out(DType::F32, {2, 257});
    p.instr("random", {step}, {y}, {31, normal}, {0.25, 1.5});
    std::vector<std::vector<uint8_t>> draws;
    for (int64_t rank : {0, 1}) {
      SCOPED_TRACE((normal ? "normal rank " : "uniform rank ") +
                   std::to_string(rank));
      std::vector<std::vector<uint8_t>> want = p.initial();
      std::vector<void *> buffers;
      for (auto &b : want)
        buffers.push_back(b.data());
      runKernel(p.artifact().programs[0].instrs[0], p.artifact().tensors,
                buffers, rank);
      std::vector<std::vector<uint8_t>> got = runEmulated(p, nullptr, rank);
      EXPECT_EQ(got[y], want[y]);
      draws.push_back(got[y]);
    }
    EXPECT_NE(draws[0], draws[1]);
  }
}

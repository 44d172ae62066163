//===- CudaHalfTest.cpp - Generated CUDA kernels with bf16/f16 operands ---===//
//
// Regions with bf16/f16 values go through both code generators. The CUDA C
// must carry the operand dtypes in its launch table (16-bit operands are
// unsigned short words), compile with NVRTC for sm_90a and sm_80, and -
// run on the CPU by CudaEmulator.h - compute what the host library
// computes: bit for bit for element-wise regions (the same conversions,
// the same f32 formulas, libm's functions for 16-bit results, which are
// the device's functions in the emulator), to one 16-bit ulp where f32 row
// reductions sit between the casts (lane order and the fast f32 exp of the
// host differ). Inputs are 16-bit words of every class.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/CudaCodegen.h"
#include "compiler/codegen/FusedCodegen.h"
#include "compiler/codegen/HostCompile.h"
#include "compiler/codegen/NvrtcCompile.h"
#include "dialects/tcc/TccDialect.h"
#include "dialects/tcc/TccOps.h"
#include "passes/Passes.h"
#include "runtime/cpu/FusedLibrary.h"
#include "runtime/core/prelude/Half.h"
#include "tests/unit/CudaEmulator.h"
#include "tests/unit/FusedTestModule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace mlir;
namespace rt = ::tcc::rt;

namespace {

struct Case {
  std::string name, signature, body;
  std::string mapping;
  bool exact = true;
  /// Inputs without raw words (a NaN anywhere in a row would make every
  /// output of that row NaN and the comparison vacuous).
  bool finite = false;
};

std::vector<Case> cases() {
  return {
      {"bf16_elements",
       "(%x: tensor<4x8x40xbf16>, %b: tensor<40xbf16>, %y: tensor<4x8x40xf32>) "
       "-> (tensor<4x8x40xbf16>, tensor<4x8x40xbf16>, tensor<4x8x40xf32>)",
       R"(%c = tcc.constant dense<0.3> : tensor<bf16>
  %0 = tcc.add %x, %b : (tensor<4x8x40xbf16>, tensor<40xbf16>) -> tensor<4x8x40xbf16>
  %1 = tcc.gelu %0 {approximate = "none"} : tensor<4x8x40xbf16>
  %2 = tcc.mul %1, %c : (tensor<4x8x40xbf16>, tensor<bf16>) -> tensor<4x8x40xbf16>
  %3 = tcc.cast %2 : tensor<4x8x40xbf16> -> tensor<4x8x40xf32>
  %4 = tcc.add %3, %y : (tensor<4x8x40xf32>, tensor<4x8x40xf32>) -> tensor<4x8x40xf32>
  %5 = tcc.cast %4 : tensor<4x8x40xf32> -> tensor<4x8x40xbf16>
  %6 = tcc.tanh %5 : tensor<4x8x40xbf16>
  %7 = tcc.sigmoid %6 : tensor<4x8x40xbf16>
  %r0 = tcc.erf %7 : tensor<4x8x40xbf16>
  %r1 = tcc.gelu_grad %x, %0 {approximate = "tanh"} : tensor<4x8x40xbf16>
  return %r0, %r1, %4 : tensor<4x8x40xbf16>, tensor<4x8x40xbf16>, tensor<4x8x40xf32>)",
       "elements"},
      {"f16_elements",
       "(%x: tensor<6x40xf16>, %y: tensor<6x40xf16>, %k: tensor<6x1xi1>) -> "
       "(tensor<6x40xf16>, tensor<6x40xbf16>)",
       R"(%big = tcc.constant dense<300.0> : tensor<f16>
  %0 = tcc.mul %x, %big : (tensor<6x40xf16>, tensor<f16>) -> tensor<6x40xf16>
  %1 = tcc.div %0, %y : (tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  %2 = tcc.exp %y : tensor<6x40xf16>
  %3 = tcc.where %k, %1, %2 : (tensor<6x1xi1>, tensor<6x40xf16>, tensor<6x40xf16>) -> tensor<6x40xf16>
  %4 = tcc.erf_grad %3, %x : tensor<6x40xf16>
  %5 = tcc.cast %4 : tensor<6x40xf16> -> tensor<6x40xbf16>
  return %3, %5 : tensor<6x40xf16>, tensor<6x40xbf16>)",
       "elements"},
      // A 16-bit value read again after a row reduction (kept as floats
      // in the lanes' arrays besides its output words), a layer norm and a
      // softmax between casts.
      {"bf16_rows",
       "(%x: tensor<4x6x48xbf16>, %r: tensor<4x6x48xbf16>, %g: tensor<48xf32>, "
       "%be: tensor<48xf32>) -> (tensor<4x6x48xbf16>, tensor<4x6x48xbf16>, "
       "tensor<4x6x48xf16>, tensor<4x6x48xbf16>)",
       R"(%0 = tcc.add %x, %r : (tensor<4x6x48xbf16>, tensor<4x6x48xbf16>) -> tensor<4x6x48xbf16>
  %1 = tcc.cast %0 : tensor<4x6x48xbf16> -> tensor<4x6x48xf32>
  %y, %mean, %rstd = tcc.layer_norm %1, %g, %be {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x6x48xf32>, tensor<48xf32>, tensor<48xf32>) -> (tensor<4x6x48xf32>, tensor<4x6x1xf32>, tensor<4x6x1xf32>)
  %2 = tcc.cast %y : tensor<4x6x48xf32> -> tensor<4x6x48xbf16>
  %3 = tcc.softmax %1 {axis = 2 : i64} : tensor<4x6x48xf32>
  %4 = tcc.cast %3 : tensor<4x6x48xf32> -> tensor<4x6x48xf16>
  %5 = tcc.cast %mean : tensor<4x6x1xf32> -> tensor<4x6x1xbf16>
  %6 = tcc.sub %0, %5 : (tensor<4x6x48xbf16>, tensor<4x6x1xbf16>) -> tensor<4x6x48xbf16>
  return %0, %2, %4, %6 : tensor<4x6x48xbf16>, tensor<4x6x48xbf16>, tensor<4x6x48xf16>, tensor<4x6x48xbf16>)",
       "rows", /*exact=*/false},
      // bf16 logits over a vocabulary-wide row (2100 columns: no per-lane
      // arrays): the widened, biased and rounded logits are recomputed in
      // every later slot and must round exactly as where they were defined.
      {"bf16_vocab_rows",
       "(%l: tensor<3x2100xbf16>, %b: tensor<2100xbf16>) -> "
       "(tensor<3x2100xf32>, tensor<3x2100xbf16>)",
       R"(%0 = tcc.add %l, %b : (tensor<3x2100xbf16>, tensor<2100xbf16>) -> tensor<3x2100xbf16>
  %1 = tcc.cast %0 : tensor<3x2100xbf16> -> tensor<3x2100xf32>
  %2 = tcc.log_softmax %1 {axis = 1 : i64} : tensor<3x2100xf32>
  %3 = tcc.softmax %1 {axis = 1 : i64} : tensor<3x2100xf32>
  %4 = tcc.cast %3 : tensor<3x2100xf32> -> tensor<3x2100xbf16>
  return %2, %4 : tensor<3x2100xf32>, tensor<3x2100xbf16>)",
       "block_rows", /*exact=*/false, /*finite=*/true},
      // bf16 through a slice view into a padded output (grid-stride: the
      // threads of columns 0..3 zero the pad).
      {"bf16_slice_padded_elements",
       "(%x: tensor<4x8x40xbf16>, %b: tensor<36xbf16>) -> "
       "tensor<4x8x40xbf16>",
       R"(%0 = tcc.slice %x {starts = array<i64: 0, 0, 0>, sizes = array<i64: 4, 8, 36>, steps = array<i64: 1, 1, 1>} : tensor<4x8x40xbf16> -> tensor<4x8x36xbf16>
  %1 = tcc.add %0, %b : (tensor<4x8x36xbf16>, tensor<36xbf16>) -> tensor<4x8x36xbf16>
  %2 = tcc.gelu %1 {approximate = "tanh"} : tensor<4x8x36xbf16>
  %3 = tcc.slice_grad %2 {shape = array<i64: 4, 8, 40>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<4x8x36xbf16> -> tensor<4x8x40xbf16>
  return %3 : tensor<4x8x40xbf16>)",
       "elements"},
      // A warp per row: a sliced bf16 input, a softmax between casts, the
      // bf16 result padded by 36 columns (more than the 32 lanes).
      {"bf16_slice_padded_rows",
       "(%x: tensor<4x6x52xbf16>) -> tensor<4x6x84xbf16>",
       R"(%0 = tcc.slice %x {starts = array<i64: 0, 0, 0>, sizes = array<i64: 4, 6, 48>, steps = array<i64: 1, 1, 1>} : tensor<4x6x52xbf16> -> tensor<4x6x48xbf16>
  %1 = tcc.cast %0 : tensor<4x6x48xbf16> -> tensor<4x6x48xf32>
  %2 = tcc.softmax %1 {axis = 2 : i64} : tensor<4x6x48xf32>
  %3 = tcc.cast %2 : tensor<4x6x48xf32> -> tensor<4x6x48xbf16>
  %4 = tcc.slice_grad %3 {shape = array<i64: 4, 6, 84>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<4x6x48xbf16> -> tensor<4x6x84xbf16>
  return %4 : tensor<4x6x84xbf16>)",
       "rows", /*exact=*/false, /*finite=*/true},
      // The mixed-precision loss gradient of a padded vocabulary: bf16
      // logits read through the slice over a wide row (recomputed in each
      // slot), the bf16 gradient stored padded.
      {"bf16_vocab_grad_padded",
       "(%l: tensor<3x2112xbf16>, %labels: tensor<3xi64>) -> "
       "tensor<3x2112xbf16>",
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.slice %l {starts = array<i64: 0, 0>, sizes = array<i64: 3, 2100>, steps = array<i64: 1, 1>} : tensor<3x2112xbf16> -> tensor<3x2100xbf16>
  %1 = tcc.cast %0 : tensor<3x2100xbf16> -> tensor<3x2100xf32>
  %2 = tcc.softmax_cross_entropy_grad %one, %1, %labels : (tensor<f32>, tensor<3x2100xf32>, tensor<3xi64>) -> tensor<3x2100xf32>
  %3 = tcc.cast %2 : tensor<3x2100xf32> -> tensor<3x2100xbf16>
  %4 = tcc.slice_grad %3 {shape = array<i64: 3, 2112>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<3x2100xbf16> -> tensor<3x2112xbf16>
  return %4 : tensor<3x2112xbf16>)",
       "block_rows", /*exact=*/false, /*finite=*/true},
      // GPT-2's loss gradient row: 50257 bf16 logits of a row padded to
      // 50304, which the block stages whole within 99 KiB of shared memory.
      {"bf16_gpt2_vocab_grad",
       "(%l: tensor<2x50304xbf16>, %labels: tensor<2xi64>) -> "
       "tensor<2x50304xbf16>",
       R"(%one = tcc.constant dense<1.0> : tensor<f32>
  %0 = tcc.slice %l {starts = array<i64: 0, 0>, sizes = array<i64: 2, 50257>, steps = array<i64: 1, 1>} : tensor<2x50304xbf16> -> tensor<2x50257xbf16>
  %1 = tcc.cast %0 : tensor<2x50257xbf16> -> tensor<2x50257xf32>
  %2 = tcc.softmax_cross_entropy_grad %one, %1, %labels : (tensor<f32>, tensor<2x50257xf32>, tensor<2xi64>) -> tensor<2x50257xf32>
  %3 = tcc.cast %2 : tensor<2x50257xf32> -> tensor<2x50257xbf16>
  %4 = tcc.slice_grad %3 {shape = array<i64: 2, 50304>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x50257xbf16> -> tensor<2x50304xbf16>
  return %4 : tensor<2x50304xbf16>)",
       "block_rows", /*exact=*/false, /*finite=*/true},
  };
}

rt::DType dtypeOf(Type t) {
  Type e = cast<ShapedType>(t).getElementType();
  return e.isF32()    ? rt::DType::F32
         : e.isBF16() ? rt::DType::BF16
         : e.isF16()  ? rt::DType::F16
                      : rt::DType::I64;
}

struct CudaHalf : ::testing::Test {
  static void SetUpTestSuite() {
    ctx = new MLIRContext();
    module = new OwningOpRef<ModuleOp>();
    std::vector<size_t> index;
    ops = ::tcc::test::fuseCases(*ctx, cases(), *module, index);
    ASSERT_TRUE(*module);
    for (size_t i : index)
      caseOf.push_back(cases()[i]);
    auto host = ::tcc::generateFusedSource(ops);
    auto cuda = ::tcc::generateCudaSource(ops);
    auto cuda90 = ::tcc::generateCudaSource(ops, 90);
    ASSERT_TRUE(succeeded(host) && succeeded(cuda) && succeeded(cuda90));
    hostSource = new std::string(*host);
    cudaSource = new ::tcc::CudaSource(*cuda);
    cudaSource90 = new ::tcc::CudaSource(*cuda90);
  }
  static void TearDownTestSuite() {
    delete cudaSource90;
    delete cudaSource;
    delete hostSource;
    delete module;
    delete ctx;
    ops.clear();
    caseOf.clear();
  }
  static MLIRContext *ctx;
  static OwningOpRef<ModuleOp> *module;
  static std::vector<Operation *> ops;
  static std::vector<Case> caseOf;
  static std::string *hostSource;
  /// For any GPU, and for sm_90 (strided, double-buffered block_rows).
  static ::tcc::CudaSource *cudaSource, *cudaSource90;
};
MLIRContext *CudaHalf::ctx;
OwningOpRef<ModuleOp> *CudaHalf::module;
std::vector<Operation *> CudaHalf::ops;
std::vector<Case> CudaHalf::caseOf;
std::string *CudaHalf::hostSource;
::tcc::CudaSource *CudaHalf::cudaSource, *CudaHalf::cudaSource90;

TEST_F(CudaHalf, LaunchTableCarriesTheDtypes) {
  ASSERT_EQ(ops.size(), cases().size()) << "one region per case";
  ASSERT_EQ(cudaSource->kernels.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    auto f = cast<mlir::tcc::FusedOp>(ops[i]);
    const rt::DeviceKernel &k = cudaSource->kernels[i];
    SCOPED_TRACE(caseOf[i].name);
    EXPECT_EQ(k.mapping, caseOf[i].mapping);
    // A block per row stages its logits row within what every GPU of
    // compute capability 8.0+ gives a block.
    if (k.mapping == "block_rows") {
      EXPECT_GE(k.smem, k.cols * 2);
      EXPECT_LE(k.smem, 99 * 1024);
    }
    ASSERT_EQ(k.inputs.size(), f.getInputs().size());
    ASSERT_EQ(k.outputs.size(), f.getNumResults());
    int halves = 0;
    for (auto [v, t] : llvm::zip(f.getInputs(), k.inputs)) {
      EXPECT_EQ(t.first, dtypeOf(v.getType()));
      halves += t.first == rt::DType::BF16 || t.first == rt::DType::F16;
    }
    for (auto [v, t] : llvm::zip(f.getResults(), k.outputs)) {
      EXPECT_EQ(t.first, dtypeOf(v.getType()));
      halves += t.first == rt::DType::BF16 || t.first == rt::DType::F16;
    }
    EXPECT_GT(halves, 0);
  }
  const std::string &src = cudaSource->source;
  EXPECT_NE(src.find("const unsigned short *__restrict__ in0"),
            std::string::npos);
  EXPECT_NE(src.find("tcc_f32_to_bf16("), std::string::npos);
  EXPECT_NE(src.find("tcc_f32_to_f16("), std::string::npos);
}

TEST_F(CudaHalf, NvrtcCompilesForSm90aAndSm80) {
  for (const char *arch : {"sm_90a", "sm_80"}) {
    ::tcc::DeviceBinary bin;
    std::string err;
    EXPECT_TRUE(::tcc::compileCudaSource(cudaSource->source, arch, bin, err))
        << arch << ": " << err;
    EXPECT_GT(bin.cubin.size(), 4u) << arch;
  }
}

/// One operand's bytes, filled by dtype.
struct Operand {
  rt::DType type;
  int64_t n;
  std::vector<uint8_t> bytes;
  float at(int64_t i) const {
    if (type == rt::DType::F32)
      return reinterpret_cast<const float *>(bytes.data())[i];
    uint16_t h = reinterpret_cast<const uint16_t *>(bytes.data())[i];
    return type == rt::DType::BF16 ? rt::bf16ToF32(h) : rt::f16ToF32(h);
  }
};

std::vector<Operand> makeOperands(const rt::DeviceKernel &k, std::mt19937 &rng,
                                  bool finite) {
  std::vector<Operand> ops;
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (const auto &[t, n] : k.inputs) {
    Operand o{t, n, std::vector<uint8_t>(n * rt::dtypeSize(t))};
    for (int64_t i = 0; i < n; ++i) {
      if (t == rt::DType::F32) {
        reinterpret_cast<float *>(o.bytes.data())[i] = u(rng);
      } else if (t == rt::DType::I64) {
        reinterpret_cast<int64_t *>(o.bytes.data())[i] = rng() & 1;
      } else {
        // A raw word (any class) or a moderate value.
        float f = u(rng);
        uint16_t w = !finite && rng() % 4 == 0 ? static_cast<uint16_t>(rng())
                     : t == rt::DType::BF16    ? rt::f32ToBf16(f)
                                               : rt::f32ToF16(f);
        reinterpret_cast<uint16_t *>(o.bytes.data())[i] = w;
      }
    }
    ops.push_back(std::move(o));
  }
  for (const auto &[t, n] : k.outputs) // 0xff: NaN, unwritten never matches
    ops.push_back({t, n, std::vector<uint8_t>(n * rt::dtypeSize(t), 0xff)});
  return ops;
}

TEST_F(CudaHalf, EmulatedKernelsMatchTheHostLibrary) {
  using namespace ::tcc::test;
  ::tcc::HostLibrary hostLib;
  std::string err;
  ASSERT_TRUE(::tcc::compileHostLibrary(*hostSource, hostLib, err)) << err;
  rt::FusedLibrary host(hostLib.bytes.data(), hostLib.bytes.size(),
                        hostLib.isa);
  // The kernels for any GPU, then sm_90's, whose block_rows kernels stride
  // over the rows (here 2 multiprocessors' worth of blocks) copying each
  // next row by the copy engine.
  for (const ::tcc::CudaSource *source : {cudaSource, cudaSource90}) {
    SCOPED_TRACE(source == cudaSource ? "any GPU" : "sm_90");
    ::tcc::HostLibrary emuLib;
    std::string emu = std::string(cudaEmulatorShim()) + source->source;
    emu += cudaEmulatorWrappers(source->kernels);
    ASSERT_TRUE(::tcc::compileHostLibrary(emu, emuLib, err)) << err;
    SharedObject so(emuLib.bytes);
    ASSERT_TRUE(so.handle) << dlerror();
    auto launch = reinterpret_cast<EmuLaunch>(so.sym("tcc_emu_launch"));
    ASSERT_TRUE(launch);

    std::mt19937 rng(5);
    int padded = 0, inPlace = 0, unaligned = 0;
    for (size_t i = 0; i < host.size(); ++i) {
      const rt::DeviceKernel &k = source->kernels[i];
      const rt::FusedLibrary::Kernel &h = host.kernel(i);
      const Case &c = caseOf[i];
      SCOPED_TRACE(c.name);
      ASSERT_EQ(h.inputs, k.inputs);
      ASSERT_EQ(h.outputs, k.outputs);
      std::vector<Operand> want = makeOperands(k, rng, c.finite), got = want;
      const std::vector<Operand> original = want;
      auto args = [](std::vector<Operand> &ops) {
        std::vector<void *> a;
        for (Operand &o : ops)
          a.push_back(o.bytes.data());
        return a;
      };
      std::vector<void *> hostArgs = args(want), emuArgs = args(got);
      std::vector<float> scratch(h.scratchFloats + 1);
      int64_t hostErr[3] = {0, 0, 0};
      ASSERT_EQ(0, h.fn(hostArgs.data(), 0, k.rows, scratch.data(), nullptr,
                        hostErr));
      long long emuErr[4] = {0, 0, 0, 0};
      emuArgs.push_back(nullptr); // no partials
      emuArgs.push_back(emuErr);
      auto fn = reinterpret_cast<EmuWrapper>(so.sym("emu_" + k.symbol));
      ASSERT_TRUE(fn);
      launch(fn, emuArgs.data(), abiGrid(k), (unsigned)k.block,
             (unsigned)k.smem);

      // Padded outputs (rows wider than the domain's): the pad columns are
      // zero words in both, written over 0xff.
      for (size_t o = k.inputs.size(); o < want.size(); ++o) {
        if (want[o].n <= k.rows * k.cols)
          continue;
        int64_t stride = want[o].n / k.rows;
        size_t size = rt::dtypeSize(want[o].type);
        ASSERT_EQ(stride * k.rows, want[o].n);
        for (const std::vector<Operand> *ops : {&want, &got})
          for (int64_t r = 0; r < k.rows; ++r)
            for (int64_t j = k.cols; j < stride; ++j)
              for (size_t b = 0; b < size; ++b)
                ASSERT_EQ((*ops)[o].bytes[(r * stride + j) * size + b], 0)
                    << (ops == &want ? "host" : "emulated") << " row " << r
                    << " column " << j;
        ++padded;
      }
      for (size_t o = k.inputs.size(); o < want.size(); ++o) {
        const Operand &w = want[o], &g = got[o];
        SCOPED_TRACE("output " + std::to_string(o - k.inputs.size()) + " (" +
                     rt::dtypeName(w.type) + ")");
        size_t size = rt::dtypeSize(w.type);
        for (int64_t e = 0; e < w.n; ++e) {
          float wv = w.at(e), gv = g.at(e);
          if (std::isnan(wv) || std::isnan(gv)) {
            ASSERT_TRUE(std::isnan(wv) && std::isnan(gv)) << "element " << e;
            continue;
          }
          if (c.exact) {
            ASSERT_EQ(0, std::memcmp(w.bytes.data() + e * size,
                                     g.bytes.data() + e * size, size))
                << "element " << e << ": host " << wv << ", emulated " << gv;
            continue;
          }
          if (std::isinf(wv) || std::isinf(gv)) {
            ASSERT_EQ(wv, gv) << "element " << e;
            continue;
          }
          int ex = std::ilogb(std::max(std::fabs(wv), 1e-30f));
          int bits = w.type == rt::DType::F16    ? 10
                     : w.type == rt::DType::BF16 ? 7
                                                 : 20;
          ASSERT_LE(std::fabs(gv - wv), std::ldexp(1.0f, ex - bits))
              << "element " << e << ": host " << wv << ", emulated " << gv;
        }
      }

      // Each in-place pair: the output written over its input's words gives
      // the same words as in its own buffer, on the host and emulated.
      EXPECT_EQ(h.inPlace, k.inPlace);
      for (auto [o, in] : k.inPlace) {
        SCOPED_TRACE("output " + std::to_string(o) + " over input " +
                     std::to_string(in));
        size_t out = k.inputs.size() + o;
        for (bool emulated : {false, true}) {
          std::vector<Operand> ops = original;
          std::vector<void *> a = args(ops);
          a[out] = a[in];
          if (emulated) {
            long long e4[4] = {0, 0, 0, 0};
            a.push_back(nullptr);
            a.push_back(e4);
            launch(fn, a.data(), abiGrid(k), (unsigned)k.block,
                   (unsigned)k.smem);
          } else {
            ASSERT_EQ(
                0, h.fn(a.data(), 0, k.rows, scratch.data(), nullptr, hostErr));
          }
          const std::vector<Operand> &ref = emulated ? got : want;
          for (size_t q = k.inputs.size(); q < ops.size(); ++q) {
            const Operand &v = q == out ? ops[in] : ops[q];
            EXPECT_EQ(v.bytes, ref[q].bytes)
                << (emulated ? "emulated" : "host") << " output "
                << q - k.inputs.size();
          }
        }
        ++inPlace;
      }

      // A block per row stores groups of 8 columns 16 bytes at a time where
      // an output is 16-byte aligned: outputs one element past an aligned
      // start take the one-by-one stores, with the same words.
      if (k.mapping != "block_rows")
        continue;
      std::vector<Operand> ops = original;
      std::vector<void *> a = args(ops);
      std::vector<std::vector<uint8_t>> shifted;
      for (size_t o = k.inputs.size(); o < ops.size(); ++o) {
        size_t size = rt::dtypeSize(ops[o].type);
        shifted.emplace_back((ops[o].n + 16) * size + 16, 0xff);
        uint8_t *p = shifted.back().data();
        p += (16 - reinterpret_cast<uintptr_t>(p) % 16) % 16 + size;
        a[o] = p;
      }
      long long e4[4] = {0, 0, 0, 0};
      a.push_back(nullptr);
      a.push_back(e4);
      launch(fn, a.data(), abiGrid(k), (unsigned)k.block, (unsigned)k.smem);
      for (size_t o = k.inputs.size(); o < ops.size(); ++o)
        EXPECT_EQ(0,
                  std::memcmp(a[o], got[o].bytes.data(), got[o].bytes.size()))
            << "output " << o - k.inputs.size() << " not 16-byte aligned";
      // Inputs one element past an aligned start: the rows are staged by
      // the threads (sm_90: no bulk copy), with the same words out.
      ops = original;
      a = args(ops);
      std::vector<std::vector<uint8_t>> moved;
      for (size_t in = 0; in < k.inputs.size(); ++in) {
        if (ops[in].type == rt::DType::I64)
          continue;
        size_t size = rt::dtypeSize(ops[in].type);
        moved.emplace_back(ops[in].bytes.size() + 32, 0);
        uint8_t *p = moved.back().data();
        p += (16 - reinterpret_cast<uintptr_t>(p) % 16) % 16 + size;
        std::memcpy(p, ops[in].bytes.data(), ops[in].bytes.size());
        a[in] = p;
      }
      long long e5[4] = {0, 0, 0, 0};
      a.push_back(nullptr);
      a.push_back(e5);
      launch(fn, a.data(), abiGrid(k), (unsigned)k.block, (unsigned)k.smem);
      for (size_t o = k.inputs.size(); o < ops.size(); ++o)
        EXPECT_EQ(0,
                  std::memcmp(a[o], got[o].bytes.data(), got[o].bytes.size()))
            << "output " << o - k.inputs.size() << " from unaligned inputs";
      ++unaligned;
    }
    EXPECT_EQ(padded, 4) << "padded outputs checked";
    EXPECT_EQ(unaligned, 3) << "unaligned block_rows outputs checked";
    int strided = 0;
    for (const rt::DeviceKernel &k : source->kernels)
      strided += k.gridPerSm > 0;
    // Not bf16_vocab_rows: its rows are 4200 bytes apart, so every other
    // row starts off a 16-byte boundary, where bulk copies cannot start.
    EXPECT_EQ(strided, source == cudaSource90 ? 2 : 0)
        << "strided block_rows kernels";
    EXPECT_GE(inPlace, 5) << "in-place pairs checked";
  }
}

} // namespace

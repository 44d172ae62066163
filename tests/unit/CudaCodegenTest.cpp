//===- CudaCodegenTest.cpp - Generated CUDA kernels (compiler side) -------===//
//
// Functions of plain tcc ops go through tcc-fuse; their regions become CUDA
// C (compiler/codegen/CudaCodegen.h), which must
//  - get the launch table right (mapping, domain, operands, partials),
//  - compile with NVRTC to a cubin (an ELF) that defines every kernel, and
//  - compute what the host library computes: the same text is run on the
//    CPU through CudaEmulator.h (32 threads per warp, real shuffles) and
//    compared with the host library's kernels on the same random inputs.
// No GPU is needed; tests/gpu runs the cubin itself on one.
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
#include "tests/unit/CudaCodegenCases.h"
#include "tests/unit/CudaEmulator.h"
#include "tests/unit/FusedTestModule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <unistd.h>

using namespace mlir;
namespace rt = ::tcc::rt;

using Case = ::tcc::test::CudaCodegenCase;

namespace {

std::vector<Case> cases() { return ::tcc::test::cudaCodegenCases(); }

/// The fused ops of every case, in module order, with the case of each.
struct CudaCodegen : ::testing::Test {
  static void SetUpTestSuite() {
    ctx = new MLIRContext();
    module = new OwningOpRef<ModuleOp>();
    std::vector<size_t> index;
    ops = ::tcc::test::fuseCases(*ctx, cases(), *module, index);
    ASSERT_TRUE(*module);
    for (size_t i : index) {
      caseOf.push_back(cases()[i].name);
      mappingOf.push_back(cases()[i].mapping);
    }
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
  }
  static MLIRContext *ctx;
  static OwningOpRef<ModuleOp> *module;
  static std::vector<Operation *> ops;
  static std::vector<std::string> caseOf, mappingOf;
  static std::string *hostSource;
  /// For any GPU, and for sm_90 (--gpu-arch sm_90a: strided, double-buffered
  /// block_rows kernels).
  static ::tcc::CudaSource *cudaSource, *cudaSource90;
};
MLIRContext *CudaCodegen::ctx;
OwningOpRef<ModuleOp> *CudaCodegen::module;
std::vector<Operation *> CudaCodegen::ops;
std::vector<std::string> CudaCodegen::caseOf, CudaCodegen::mappingOf;
std::string *CudaCodegen::hostSource;
::tcc::CudaSource *CudaCodegen::cudaSource, *CudaCodegen::cudaSource90;

TEST_F(CudaCodegen, LaunchTableDescribesEveryRegion) {
  ASSERT_EQ(cudaSource->kernels.size(), ops.size());
  std::set<std::string> cased(caseOf.begin(), caseOf.end());
  EXPECT_EQ(cased.size(), cases().size()) << "a case formed no region";
  for (size_t i = 0; i < ops.size(); ++i) {
    auto f = cast<mlir::tcc::FusedOp>(ops[i]);
    const rt::DeviceKernel &k = cudaSource->kernels[i];
    SCOPED_TRACE(caseOf[i] + " kernel " + std::to_string(i));
    EXPECT_EQ(f.getKernel(), (int64_t)i);
    // Its own symbol, or an earlier kernel's whose code is the same but for
    // the number (KernelDedup.h), which the source then says.
    std::string own = "tcc_fused_" + std::to_string(i);
    if (k.symbol != own) {
      int64_t j = std::stoll(k.symbol.substr(10));
      EXPECT_LT(j, (int64_t)i);
      EXPECT_NE(cudaSource->source.find("// kernel " + std::to_string(i) +
                                        ": the code of kernel " +
                                        std::to_string(j) + "\n"),
                std::string::npos);
    }
    EXPECT_EQ(k.mapping, mappingOf[i]);
    bool blockRows = k.mapping == "block_rows";
    // A block per row: at least 16 columns a thread, 128 to 512 threads.
    int64_t perRowBlock =
        std::clamp<int64_t>((k.cols / 16 + 31) / 32 * 32, 128, 512);
    EXPECT_EQ(k.block, blockRows             ? perRowBlock
                       : k.mapping == "rows" ? 128
                                             : 256);
    bool loss = caseOf[i].rfind("cross_entropy", 0) == 0;
    int64_t colSums = caseOf[i] == "layer_norm_grad" ? 2
                      : caseOf[i] == "bias_grad"     ? 1
                                                     : 0;
    // Column sums: each warp's sums of a slice's rows in shared memory.
    EXPECT_EQ(k.smem, colSums     ? 4 * colSums * k.cols * 4
                      : blockRows ? k.smem
                                  : 0);
    EXPECT_EQ(k.smem > 0, blockRows || colSums);
    // A loss: its rows' sums and whether each counts (ignore_index).
    EXPECT_EQ(k.partialsPerRow, loss ? 2 : 0);
    EXPECT_EQ(k.colSums, colSums);
    EXPECT_EQ(k.finSymbol, loss || colSums ? k.symbol + "_fin" : "");
    ASSERT_EQ(k.inputs.size(), f.getInputs().size());
    ASSERT_EQ(k.outputs.size(), f.getNumResults());
    int64_t largest = 0;
    for (auto [v, t] : llvm::zip(f.getInputs(), k.inputs)) {
      auto type = cast<ShapedType>(v.getType());
      EXPECT_EQ(t.first, type.getElementType().isF32() ? rt::DType::F32
                                                       : rt::DType::I64);
      EXPECT_EQ(t.second, type.getNumElements());
      largest = std::max(largest, t.second);
    }
    for (auto [v, t] : llvm::zip(f.getResults(), k.outputs)) {
      EXPECT_EQ(t.first, rt::DType::F32);
      EXPECT_EQ(t.second, cast<ShapedType>(v.getType()).getNumElements());
      largest = std::max(largest, t.second);
    }
    int64_t domain = 0;
    for (const Case &c : cases())
      if (c.name == caseOf[i])
        domain = c.domain;
    EXPECT_EQ(k.rows * k.cols, domain ? domain : largest);
    // The source has the kernel with its mapping's shape.
    const std::string &src = cudaSource->source;
    size_t at = src.find("__launch_bounds__(" + std::to_string(k.block) +
                         (blockRows ? ", 2" : "") + ") " + k.symbol + "(");
    ASSERT_NE(at, std::string::npos);
    size_t end = src.find("\n}\n", at);
    std::string body = src.substr(at, end - at);
    if (k.mapping == "rows") {
      EXPECT_NE(body.find("tcc_k < " + std::to_string((k.cols + 31) / 32) +
                          "; ++tcc_k"),
                std::string::npos)
          << body;
    } else if (blockRows) {
      EXPECT_NE(body.find("for (long long r = blockIdx.x; r < " +
                          std::to_string(k.rows) + "; r += gridDim.x)"),
                std::string::npos)
          << body;
      // Staged while the budget lasts: the unstaged case's second row
      // (another 80000 bytes) is read from global memory.
      size_t copies = 0;
      for (size_t p = body.find("tcc_stage_row("); p != std::string::npos;
           p = body.find("tcc_stage_row(", p + 1))
        ++copies;
      EXPECT_EQ(copies, caseOf[i] == "cross_entropy_unstaged" ? 1u : 2u)
          << body;
      // Columns in groups of 8 (16-byte shared loads) when every row is
      // staged; an unstaged row keeps columns t, t + B, .. (coalesced).
      bool groups = body.find("for (int tcc_q = threadIdx.x; tcc_q < " +
                              std::to_string(k.cols / 8)) != std::string::npos;
      EXPECT_EQ(groups, caseOf[i] != "cross_entropy_unstaged") << body;
      EXPECT_EQ(body.find("tcc_ld16(tcc_st") != std::string::npos, groups)
          << body;
    } else
      EXPECT_NE(body.find("tcc_i += (long long)gridDim.x * blockDim.x"),
                std::string::npos)
          << body;
    EXPECT_EQ(body.find("std::"), std::string::npos) << body;
    EXPECT_EQ(body.find("__builtin"), std::string::npos) << body;
  }
}

/// The names of the functions an ELF64 object defines.
std::set<std::string> elfFunctions(const std::vector<uint8_t> &elf) {
  std::set<std::string> names;
  auto *eh = reinterpret_cast<const Elf64_Ehdr *>(elf.data());
  if (elf.size() < sizeof(Elf64_Ehdr) || eh->e_shoff == 0 ||
      eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > elf.size())
    return names;
  auto *sh = reinterpret_cast<const Elf64_Shdr *>(elf.data() + eh->e_shoff);
  for (unsigned s = 0; s < eh->e_shnum; ++s) {
    if (sh[s].sh_type != SHT_SYMTAB || sh[s].sh_link >= eh->e_shnum)
      continue;
    const Elf64_Shdr &strtab = sh[sh[s].sh_link];
    if (sh[s].sh_offset + sh[s].sh_size > elf.size() ||
        strtab.sh_offset + strtab.sh_size > elf.size())
      continue;
    auto *sym =
        reinterpret_cast<const Elf64_Sym *>(elf.data() + sh[s].sh_offset);
    for (size_t i = 0; i < sh[s].sh_size / sizeof(Elf64_Sym); ++i)
      if (ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC &&
          sym[i].st_shndx != SHN_UNDEF && sym[i].st_name < strtab.sh_size)
        names.insert(reinterpret_cast<const char *>(
            elf.data() + strtab.sh_offset + sym[i].st_name));
  }
  return names;
}

TEST_F(CudaCodegen, NvrtcCompilesEveryKernelToACubin) {
  ::tcc::DeviceBinary bin;
  std::string err;
  ASSERT_TRUE(::tcc::compileCudaSource(cudaSource->source, "sm_90a", bin, err))
      << err;
  ASSERT_GT(bin.cubin.size(), 4u);
  EXPECT_EQ(0, std::memcmp(bin.cubin.data(), ELFMAG, SELFMAG));
  EXPECT_EQ(bin.compiler.rfind("nvrtc ", 0), 0u) << bin.compiler;
  std::set<std::string> defined = elfFunctions(bin.cubin);
  for (const rt::DeviceKernel &k : cudaSource->kernels)
    for (const std::string &sym : {k.symbol, k.finSymbol})
      EXPECT_TRUE(sym.empty() || defined.count(sym))
          << sym << " is not in the cubin";
  // An older architecture takes the same source.
  ::tcc::DeviceBinary old;
  EXPECT_TRUE(::tcc::compileCudaSource(cudaSource->source, "sm_80", old, err))
      << err;
}

TEST(NvrtcCompile, ArchitecturesAreChecked) {
  std::string err;
  EXPECT_TRUE(::tcc::checkGpuArch("sm_90a", err)) << err;
  EXPECT_TRUE(::tcc::checkGpuArch("sm_80", err)) << err;
  EXPECT_FALSE(::tcc::checkGpuArch("sm_20", err));
  EXPECT_NE(err.find("'sm_20' is not supported"), std::string::npos) << err;
  EXPECT_NE(err.find("sm_90"), std::string::npos) << err; // lists them
  EXPECT_FALSE(::tcc::checkGpuArch("sm_80a", err));
  EXPECT_NE(err.find("no architecture-specific"), std::string::npos) << err;
  EXPECT_FALSE(::tcc::checkGpuArch("compute_90", err));
  EXPECT_NE(err.find("not of the form"), std::string::npos) << err;
}

TEST(NvrtcCompile, ErrorsCarryTheLog) {
  ::tcc::DeviceBinary bin;
  std::string err;
  EXPECT_FALSE(::tcc::compileCudaSource(
      "extern \"C\" __global__ void k() { undeclared_thing(); }", "sm_90a", bin,
      err));
  EXPECT_NE(err.find("NVRTC failed"), std::string::npos) << err;
  EXPECT_NE(err.find("undeclared_thing"), std::string::npos) << err;
}

struct Buffers {
  std::vector<std::vector<float>> f32;
  std::vector<std::vector<long long>> i64;
  std::vector<std::vector<float>> out;
  std::vector<double> partials;
  long long err[4] = {0, 0, 0, 0};
  std::vector<void *> args; // inputs, outputs, partials, err

  Buffers(const rt::DeviceKernel &k, std::mt19937 &rng) {
    std::uniform_real_distribution<float> real(-3.0f, 3.0f);
    std::uniform_int_distribution<long long> label(0, k.cols - 1);
    f32.reserve(k.inputs.size());
    i64.reserve(k.inputs.size());
    for (const auto &[t, n] : k.inputs) {
      if (t == rt::DType::F32) {
        f32.emplace_back(n);
        for (float &v : f32.back())
          v = real(rng);
        args.push_back(f32.back().data());
      } else {
        i64.emplace_back(n);
        for (long long &v : i64.back())
          v = label(rng);
        // Class 0 at least once: the cases that ignore it have such a row.
        if (n > 1)
          i64.back()[1] = 0;
        args.push_back(i64.back().data());
      }
    }
    out.reserve(k.outputs.size());
    for (const auto &o : k.outputs) {
      // NaN: an element a kernel forgets to write does not match.
      out.emplace_back(o.second, std::nanf(""));
      args.push_back(out.back().data());
    }
    partials.assign(k.partialCount(), std::nan(""));
    args.push_back(k.partialCount() ? partials.data() : nullptr);
    args.push_back(err);
  }
  /// A copy whose args point at its own vectors (`k`: the kernel).
  Buffers(const Buffers &from, const rt::DeviceKernel &k) : Buffers(from) {
    size_t f = 0, n = 0;
    args.clear();
    for (const auto &in : k.inputs)
      args.push_back(in.first == rt::DType::F32 ? (void *)f32[f++].data()
                                                : (void *)i64[n++].data());
    for (auto &o : out)
      args.push_back(o.data());
    args.push_back(k.partialCount() ? partials.data() : nullptr);
    args.push_back(err);
  }
  void resetOutputs() {
    for (auto &o : out)
      std::fill(o.begin(), o.end(), std::nanf(""));
    std::fill(partials.begin(), partials.end(), std::nan(""));
    std::fill(err, err + 4, 0);
  }
};

/// Runs kernel `k` of the emulated CUDA library on `b` with `grid` blocks.
void runEmulated(const ::tcc::test::SharedObject &so, const rt::DeviceKernel &k,
                 Buffers &b, unsigned grid) {
  using namespace ::tcc::test;
  auto launch = reinterpret_cast<EmuLaunch>(so.sym("tcc_emu_launch"));
  auto fn = reinterpret_cast<EmuWrapper>(so.sym("emu_" + k.symbol));
  ASSERT_TRUE(launch && fn);
  launch(fn, b.args.data(), grid, (unsigned)k.block, (unsigned)k.smem);
  if (!k.finSymbol.empty() && b.err[3] == 0) {
    auto fin = reinterpret_cast<EmuWrapper>(so.sym("emu_" + k.finSymbol));
    ASSERT_TRUE(fin);
    auto [finGrid, finBlock] = abiFin(k);
    launch(fin, b.args.data(), finGrid, finBlock, 0);
  }
}

/// The host library of the cases' regions and their CUDA C compiled for
/// the emulator.
struct Libraries {
  ::tcc::HostLibrary hostLib, emuLib;
  std::unique_ptr<rt::FusedLibrary> host;
  std::unique_ptr<::tcc::test::SharedObject> so;
};
void buildLibraries(const std::string &hostSource,
                    const ::tcc::CudaSource &cuda, Libraries &l) {
  std::string err;
  ASSERT_TRUE(::tcc::compileHostLibrary(hostSource, l.hostLib, err)) << err;
  l.host = std::make_unique<rt::FusedLibrary>(
      l.hostLib.bytes.data(), l.hostLib.bytes.size(), l.hostLib.isa);
  std::string emu = std::string(::tcc::test::cudaEmulatorShim()) + cuda.source;
  emu += ::tcc::test::cudaEmulatorWrappers(cuda.kernels);
  ASSERT_TRUE(::tcc::compileHostLibrary(emu, l.emuLib, err)) << err;
  l.so = std::make_unique<::tcc::test::SharedObject>(l.emuLib.bytes);
  ASSERT_TRUE(l.so->handle) << dlerror();
}

TEST_F(CudaCodegen, EmulatedKernelsMatchTheHostLibrary) {
  using namespace ::tcc::test;
  Libraries libs;
  ASSERT_NO_FATAL_FAILURE(buildLibraries(*hostSource, *cudaSource, libs));
  const rt::FusedLibrary &host = *libs.host;
  const SharedObject &so = *libs.so;
  ASSERT_EQ(host.size(), cudaSource->kernels.size());

  std::mt19937 rng(11);
  int padded = 0;
  for (size_t i = 0; i < host.size(); ++i) {
    const rt::DeviceKernel &k = cudaSource->kernels[i];
    const rt::FusedLibrary::Kernel &h = host.kernel(i);
    SCOPED_TRACE(caseOf[i] + " kernel " + std::to_string(i) + " (" + k.name +
                 ")");
    Buffers want(k, rng), got(want, k);
    std::vector<float> scratch(h.scratchFloats + 1);
    std::vector<double> hostPartials(h.partialCount() + 1);
    int64_t hostErr[3] = {0, 0, 0};
    ASSERT_EQ(0, h.fn(want.args.data(), 0, k.rows, scratch.data(),
                      hostPartials.data(), hostErr));
    if (h.fin)
      h.fin(want.args.data(), hostPartials.data());

    runEmulated(so, k, got, abiGrid(k));
    ASSERT_EQ(got.err[3], 0);
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      float scale = 0;
      for (float v : want.out[o])
        scale = std::max(scale, std::fabs(v));
      for (size_t e = 0; e < want.out[o].size(); ++e) {
        float w = want.out[o][e], g = got.out[o][e];
        ASSERT_NEAR(g, w, 1e-5f * scale + 2e-5f * std::fabs(w))
            << "output " << o << " element " << e;
      }
    }
    // Padded outputs (rows wider than the domain's): the pad columns are
    // zeros in both, written over NaN.
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      int64_t n = k.outputs[o].second;
      if (n <= k.rows * k.cols)
        continue;
      ASSERT_EQ(n % k.rows, 0);
      int64_t stride = n / k.rows;
      for (int64_t r = 0; r < k.rows; ++r)
        for (int64_t j = k.cols; j < stride; ++j)
          for (const Buffers *b : {&want, &got}) {
            uint32_t bits;
            std::memcpy(&bits, &b->out[o][r * stride + j], 4);
            ASSERT_EQ(bits, 0u)
                << (b == &want ? "host" : "emulated") << " output " << o
                << " row " << r << " column " << j;
          }
      ++padded;
    }
    // One block strides over the whole domain, bit for bit the same.
    std::vector<std::vector<float>> first = got.out;
    got.resetOutputs();
    runEmulated(so, k, got, 1);
    for (size_t o = 0; o < k.outputs.size(); ++o)
      EXPECT_EQ(0, std::memcmp(first[o].data(), got.out[o].data(),
                               first[o].size() * sizeof(float)))
          << "output " << o << " depends on the grid";

    if (k.partialsPerRow == 0)
      continue;
    // A label out of range (row 2): the error words, like the host's.
    for (auto &labels : got.i64)
      labels[std::min<int64_t>(2, labels.size() - 1)] = k.cols;
    got.resetOutputs();
    runEmulated(so, k, got, abiGrid(k));
    EXPECT_EQ(got.err[3], 1);
    EXPECT_EQ(got.err[0], 2);
    EXPECT_EQ(got.err[1], k.cols);
    EXPECT_EQ(got.err[2], k.cols);
  }
  EXPECT_EQ(padded, 6) << "padded outputs checked";
}

// in_place pairs (output, input): the analysis finds the ones each case
// allows and refuses the ones whose input is read after the output is
// written; and every pair it lists computes, with the output written over
// the input's bytes, bit for bit what it computes in separate buffers, in
// the host library and in the emulated CUDA kernel (lanes are threads).
TEST_F(CudaCodegen, InPlacePairsRunOverTheirInputs) {
  using namespace ::tcc::test;
  using Pairs = std::vector<std::pair<int64_t, int64_t>>;
  const std::map<std::string, Pairs> expected = {
      // Element-wise: every output over the one full input.
      {"elementwise", {{0, 0}, {1, 0}}},
      // The loss gradient over the padded logits it reads through a slice.
      {"cross_entropy_slice_padded", {{1, 0}}},
      // Wide rows, which keep no vectors between slots: the padded biased
      // logits (output 1, the first loop) are what later slots read back,
      // so the logits are read only before; and the gradient (output 2).
      {"cross_entropy_vocab_padded", {{1, 0}, {2, 0}}},
      // exp(x - mean) (output 2) in the first loop; the sum of squares
      // after it reads its vector from a scratch row or lane array, not x.
      {"reductions", {{2, 0}}},
      // dy (input 1) is read by the last loop, after the loop that writes
      // log_softmax (output 0): that pair is refused; x is read by the
      // first loops only, dy by the last, which writes output 1.
      {"log_softmax", {{0, 0}, {1, 0}, {1, 1}}},
      // Padded outputs are wider than the input.
      {"padded_rows_readback", {}},
  };
  for (const auto &[name, pairs] : expected) {
    size_t i = std::find(caseOf.begin(), caseOf.end(), name) - caseOf.begin();
    ASSERT_LT(i, caseOf.size()) << name;
    EXPECT_EQ(cudaSource->kernels[i].inPlace, pairs) << name;
  }

  Libraries libs;
  ASSERT_NO_FATAL_FAILURE(buildLibraries(*hostSource, *cudaSource, libs));
  const rt::FusedLibrary &host = *libs.host;
  const SharedObject &so = *libs.so;

  std::mt19937 rng(23);
  int checked = 0;
  for (size_t i = 0; i < host.size(); ++i) {
    const rt::DeviceKernel &k = cudaSource->kernels[i];
    const rt::FusedLibrary::Kernel &h = host.kernel(i);
    EXPECT_EQ(h.inPlace, k.inPlace) << "host and CUDA tables differ";
    for (auto [o, in] : k.inPlace) {
      SCOPED_TRACE(caseOf[i] + " kernel " + std::to_string(i) + " output " +
                   std::to_string(o) + " over input " + std::to_string(in));
      ASSERT_EQ(k.inputs[in].first, rt::DType::F32);
      std::vector<float> scratch(h.scratchFloats + 1);
      std::vector<double> partials(h.partialCount() + 1);
      int64_t hostErr[3] = {0, 0, 0};
      // Separate buffers (the reference), then the output's pointer at the
      // input's floats.
      Buffers want(k, rng);
      size_t nIn = k.inputs.size();
      auto alias = [&](Buffers &b) {
        b.args[nIn + o] = b.args[in];
        return static_cast<float *>(b.args[in]);
      };
      Buffers hostAlias(want, k), emuWant(want, k), emuAlias(want, k);
      ASSERT_EQ(0, h.fn(want.args.data(), 0, k.rows, scratch.data(),
                        partials.data(), hostErr));
      if (h.fin)
        h.fin(want.args.data(), partials.data());
      float *over = alias(hostAlias);
      std::fill(partials.begin(), partials.end(), 0.0); // the ABI's start
      ASSERT_EQ(0, h.fn(hostAlias.args.data(), 0, k.rows, scratch.data(),
                        partials.data(), hostErr));
      if (h.fin)
        h.fin(hostAlias.args.data(), partials.data());
      runEmulated(so, k, emuWant, abiGrid(k));
      float *emuOver = alias(emuAlias);
      runEmulated(so, k, emuAlias, abiGrid(k));
      size_t n = want.out[o].size();
      EXPECT_EQ(0, std::memcmp(over, want.out[o].data(), n * 4)) << "host";
      EXPECT_EQ(0, std::memcmp(emuOver, emuWant.out[o].data(), n * 4))
          << "emulated";
      for (size_t q = 0; q < k.outputs.size(); ++q) {
        if (q == (size_t)o)
          continue;
        EXPECT_EQ(0, std::memcmp(hostAlias.out[q].data(), want.out[q].data(),
                                 want.out[q].size() * 4))
            << "host output " << q;
        EXPECT_EQ(0, std::memcmp(emuAlias.out[q].data(), emuWant.out[q].data(),
                                 emuWant.out[q].size() * 4))
            << "emulated output " << q;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 10) << "in-place pairs checked";
}

// On sm_90 the block_rows kernels whose staged rows fit twice stride over
// the rows with a grid of gridPerSm blocks a multiprocessor, the copy
// engine fetching each block's next row while it computes one. They must
// compute what the kernels for any GPU compute, bit for bit (the same
// threads a block, so the same reductions), whatever the grid: blocks of
// one row, of several (the halves alternate), one block for all; with
// outputs written over their inputs; and stop at a bad label.
TEST_F(CudaCodegen, Sm90KernelsStrideAndDoubleBufferTheirRows) {
  using namespace ::tcc::test;
  ASSERT_EQ(cudaSource90->kernels.size(), cudaSource->kernels.size());
  std::set<std::string> strided;
  for (size_t i = 0; i < ops.size(); ++i) {
    const rt::DeviceKernel &k0 = cudaSource->kernels[i],
                           &k = cudaSource90->kernels[i];
    SCOPED_TRACE(caseOf[i] + " kernel " + std::to_string(i));
    EXPECT_EQ(k0.gridPerSm, 0);
    EXPECT_EQ(k.mapping, k0.mapping);
    if (k.gridPerSm == 0) {
      EXPECT_EQ(k.smem, k0.smem);
      EXPECT_EQ(k.block, k0.block);
      continue;
    }
    strided.insert(caseOf[i]);
    EXPECT_EQ(k.mapping, "block_rows");
    // Up to 1024 threads (one block a multiprocessor of a vocabulary's
    // rows) where the others stop at 512.
    EXPECT_EQ(k.block, caseOf[i] == "cross_entropy_unstaged" ? 1024 : k0.block);
    // Both halves, the reduction slots and two barriers.
    EXPECT_GT(k.smem, k0.smem);
    EXPECT_LE(k.smem, rt::kMaxKernelSmem);
    EXPECT_GE(k.gridPerSm, 1);
    EXPECT_LE(k.gridPerSm * (k.smem + 1024), 228 * 1024);
    const std::string &src = cudaSource90->source;
    size_t at = src.find("__launch_bounds__(" + std::to_string(k.block) + ", " +
                         std::to_string(k.gridPerSm) + ") " + k.symbol + "(");
    ASSERT_NE(at, std::string::npos);
    std::string body = src.substr(at, src.find("\n}\n", at) - at);
    EXPECT_NE(body.find("tcc_bulk_copy("), std::string::npos) << body;
    EXPECT_NE(body.find("tcc_mbar_wait(tcc_bar + tcc_h, (tcc_it >> 1) & 1)"),
              std::string::npos)
        << body;
    // Unaligned inputs: the threads stage the row as before.
    EXPECT_NE(body.find("tcc_stage_row("), std::string::npos) << body;
  }
  // The staged rows fit twice: every wide case, the vocabulary rows read
  // through a slice and a broadcast bias among them; the unstaged case
  // double-buffers the one row it stages.
  EXPECT_EQ(strided, (std::set<std::string>{"cross_entropy_vocab",
                                            "cross_entropy_vocab_ignore_smoothing",
                                            "cross_entropy_unstaged",
                                            "cross_entropy_vocab_out",
                                            "cross_entropy_vocab_padded"}));

  ::tcc::DeviceBinary bin;
  std::string err;
  ASSERT_TRUE(
      ::tcc::compileCudaSource(cudaSource90->source, "sm_90a", bin, err))
      << err;

  Libraries any, sm90;
  ASSERT_NO_FATAL_FAILURE(buildLibraries(*hostSource, *cudaSource, any));
  ASSERT_NO_FATAL_FAILURE(buildLibraries(*hostSource, *cudaSource90, sm90));
  std::mt19937 rng(31);
  int checked = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const rt::DeviceKernel &k0 = cudaSource->kernels[i],
                           &k = cudaSource90->kernels[i];
    if (k.gridPerSm == 0)
      continue;
    SCOPED_TRACE(caseOf[i] + " kernel " + std::to_string(i));
    Buffers want(k0, rng);
    runEmulated(*any.so, k0, want, abiGrid(k0));
    ASSERT_EQ(want.err[3], 0);
    // Bit for bit where the blocks are as large (the same reductions),
    // else as close as the host library's check allows.
    auto close = [&](const Buffers &b, const std::string &what) {
      for (size_t o = 0; o < k.outputs.size(); ++o) {
        if (k.block == k0.block) {
          EXPECT_EQ(0, std::memcmp(b.out[o].data(), want.out[o].data(),
                                   want.out[o].size() * sizeof(float)))
              << what << ": output " << o;
          continue;
        }
        float scale = 0;
        for (float v : want.out[o])
          scale = std::max(scale, std::fabs(v));
        for (size_t e = 0; e < want.out[o].size(); ++e)
          ASSERT_NEAR(b.out[o][e], want.out[o][e],
                      1e-5f * scale + 2e-5f * std::fabs(want.out[o][e]))
              << what << ": output " << o << " element " << e;
      }
    };
    std::vector<std::vector<float>> first;
    for (unsigned grid : {abiGrid(k), 1u, 2u, (unsigned)k.rows}) {
      Buffers got(want, k);
      got.resetOutputs();
      runEmulated(*sm90.so, k, got, grid);
      ASSERT_EQ(got.err[3], 0);
      close(got, "grid " + std::to_string(grid));
      // Every grid, bit for bit the same.
      if (first.empty())
        first = got.out;
      for (size_t o = 0; o < k.outputs.size(); ++o)
        EXPECT_EQ(0, std::memcmp(first[o].data(), got.out[o].data(),
                                 first[o].size() * sizeof(float)))
            << "grid " << grid << ": output " << o;
    }
    for (auto [o, in] : k.inPlace) {
      Buffers over(want, k);
      over.resetOutputs();
      over.args[k.inputs.size() + o] = over.args[in];
      runEmulated(*sm90.so, k, over, 2);
      EXPECT_EQ(0, std::memcmp(over.args[in], first[o].data(),
                               first[o].size() * sizeof(float)))
          << "output " << o << " over input " << in;
    }
    if (k.partialsPerRow) {
      Buffers bad(want, k);
      bad.resetOutputs();
      for (auto &labels : bad.i64)
        labels[std::min<int64_t>(2, labels.size() - 1)] = k.cols;
      runEmulated(*sm90.so, k, bad, 2);
      EXPECT_EQ(bad.err[3], 1);
      EXPECT_EQ(bad.err[0], std::min<int64_t>(2, k.rows - 1));
      EXPECT_EQ(bad.err[1], k.cols);
    }
    ++checked;
  }
  EXPECT_EQ(checked, (int)strided.size());
}

} // namespace

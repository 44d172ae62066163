//===- ConformanceTest.cpp - Every kernel case on every backend -----------===//
//
// The conformance suite: each case of KernelCases.h runs through every
// registered backend (backends::names()), compiled and eager, by the
// Session interface alone (openSession, upload, run, synchronize,
// download), and is compared with the CPU kernels' results. The CPU
// backend runs those same kernels, so it must match bit for bit (what
// differs is the session: the arena, eager allocation, uploads); another
// backend matches within the case's tolerances. A backend this machine
// cannot open is a skip with its reason; a case calling a kernel that the
// backend's table lacks (Backend::hasKernel) is a skip only once its
// session has refused the case naming that kernel, so the day the kernel
// lands the case runs. KernelCases.CoverEveryKernel keeps the cases in
// step with KernelList.def.
//
//===----------------------------------------------------------------------===//
#include "KernelCases.h"

#ifdef TCC_TEST_CUDA
#include "CudaTestUtil.h"
#endif

#include "runtime/core/Backend.h"

#include <gtest/gtest-spi.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <tuple>

using namespace tcc::rt;
using namespace tcc::rt::test;

namespace {

/// Kernels no case needs to call, each with the reason. Keep it short: a
/// kernel here has no cross-backend check in this suite.
const std::map<std::string, std::string> &coverageExemptions() {
  static const std::map<std::string, std::string> exempt = {
      {"fused",
       "its code is generated per artifact (a host library or a cubin the "
       "compiler emits): FusedCodegenTest, FusedHalfTest and CudaCodegenTest "
       "run generated kernels against the library kernels"},
  };
  return exempt;
}

/// What a backend's tests set around a case it runs: the CUDA tiled
/// attention's warp rows, copies and products the case asks for. Null
/// where the backend has no such settings.
std::shared_ptr<void> backendSettings(const std::string &backend,
                                      const KernelCase &c) {
#ifdef TCC_TEST_CUDA
  if (backend == "cuda")
    return std::make_shared<CaseScope>(c);
#else
  (void)backend;
  (void)c;
#endif
  return nullptr;
}

/// The phrase a backend's session refuses a kernel it lacks with, beyond
/// the kernel's name ("" where only the name is expected).
std::string refusalOf(const std::string &backend) {
  return backend == "cuda" ? "no CUDA kernel" : "";
}

/// The CPU kernels' results of each case, computed once: every backend
/// and mode compares with the same bytes.
const std::vector<std::vector<uint8_t>> &referenceOf(const KernelCase &c) {
  static std::map<std::string, std::vector<std::vector<uint8_t>>> cache;
  auto it = cache.find(c.name);
  if (it == cache.end())
    it = cache.emplace(c.name, c.prog.runCpu()).first;
  return it->second;
}

/// (backend, "compiled" or "eager", case): strings, so that a test's
/// parameters print readably.
using Param = std::tuple<std::string, std::string, std::string>;

std::string paramName(const ::testing::TestParamInfo<Param> &i) {
  return std::get<0>(i.param) + "_" + std::get<1>(i.param) + "_" +
         std::get<2>(i.param);
}

class BackendCase : public ::testing::TestWithParam<Param> {};

} // namespace

TEST_P(BackendCase, MatchesTheReference) {
  const auto &[backend, modeName, name] = GetParam();
  const ExecMode mode =
      modeName == "eager" ? ExecMode::Eager : ExecMode::Compiled;
  const KernelCase &c = kernelCase(name);
  std::string why;
  const Backend *b = backends::find(backend, &why);
  ASSERT_NE(b, nullptr) << backend << " is listed but does not load: " << why;
  if (!b->available(&why))
    GTEST_SKIP() << backend << ": " << why;

  std::vector<std::string> lacking;
  for (tcc::rt::abi::KernelId k : kernelsOf(c))
    if (!b->hasKernel(k))
      lacking.push_back(tcc::rt::abi::name(k));
  if (!lacking.empty()) {
    // The session must refuse the case, naming a kernel the table lacks:
    // never run part of it, nor fall back elsewhere.
    std::string list;
    for (const std::string &k : lacking)
      list += (list.empty() ? "" : ", ") + k;
    try {
      openSession(backend, c.prog.artifact(), mode);
      ADD_FAILURE() << backend << " opened a case calling " << list
                    << ", which its table lacks";
    } catch (const Error &e) {
      std::string what = e.what();
      bool named = false;
      for (const std::string &k : lacking)
        named |= what.find("(" + k + ")") != std::string::npos;
      EXPECT_TRUE(named) << "the refusal names none of " << list << ": "
                         << what;
      EXPECT_NE(what.find(refusalOf(backend)), std::string::npos) << what;
    }
    GTEST_SKIP() << backend << " has no kernel for " << list
                 << " (its session refuses the case)";
  }

  std::shared_ptr<void> settings = backendSettings(backend, c);
  std::vector<std::vector<uint8_t>> got = c.prog.runOn(backend, mode);
  if (backend == "cpu")
    expectSameBits(c, referenceOf(c), got);
  else
    compareCase(c, referenceOf(c), got);
}

INSTANTIATE_TEST_SUITE_P(
    Conformance, BackendCase,
    ::testing::Combine(::testing::ValuesIn(backends::names()),
                       ::testing::Values("compiled", "eager"),
                       ::testing::ValuesIn(kernelCaseNames())),
    paramName);

// Every kernel of KernelList.def is called by some case, or exempt with a
// reason: a new kernel comes with its conformance case.
TEST(KernelCases, CoverEveryKernel) {
  std::set<tcc::rt::abi::KernelId> called;
  for (const KernelCase &c : allKernelCases()) {
    std::set<tcc::rt::abi::KernelId> k = kernelsOf(c);
    called.insert(k.begin(), k.end());
  }
  const auto &exempt = coverageExemptions();
  for (const tcc::rt::abi::KernelInfo &k : tcc::rt::abi::kKernels) {
    bool isExempt = exempt.count(k.name) != 0;
    if (isExempt) {
      EXPECT_EQ(called.count(k.id), 0u)
          << k.name << " is exempt but a case calls it: drop the exemption";
      continue;
    }
    EXPECT_EQ(called.count(k.id), 1u)
        << "kernel " << k.name
        << " has no conformance case: add one to tests/unit/KernelCases*.h "
           "(or, with a reason, to coverageExemptions in ConformanceTest.cpp)";
  }
  for (const auto &[name, reason] : exempt)
    EXPECT_TRUE(tcc::rt::abi::kernelByName(name).has_value())
        << "exempt kernel " << name << " is not in KernelList.def";
}

// Case names are unique (they name the tests) and every instr of every
// case passes the kernels' checks, so a case tests a kernel and not a
// malformed instr.
TEST(KernelCases, AreNamedOnceAndWellFormed) {
  std::set<std::string> names;
  for (const KernelCase &c : allKernelCases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "two cases named " << c.name;
    EXPECT_FALSE(c.outs.empty()) << c.name << " compares no output";
    const Artifact &a = c.prog.artifact();
    for (const Program &p : a.programs)
      for (const Instr &in : p.instrs)
        EXPECT_NO_THROW(checkInstr(in, a.tensors))
            << c.name << ": " << in.kernel;
    EXPECT_NO_THROW(validateArtifact(a)) << c.name;
  }
}

// The comparisons see a difference: a flipped low bit of one f32 output
// fails the CPU's bit-for-bit check but not the tolerance, and a value off
// by more than the tolerance fails both (so a backend that wrote nothing,
// or the wrong tensor, cannot pass).
TEST(KernelCases, ComparisonsSeeADifference) {
  const KernelCase &c = kernelCase("unary_f32");
  const std::vector<std::vector<uint8_t>> &ref = referenceOf(c);
  ASSERT_EQ(c.prog.info(c.outs[0]).dtype, DType::F32);
  std::vector<std::vector<uint8_t>> got = ref;
  got[c.outs[0]][0] ^= 1;
  EXPECT_NONFATAL_FAILURE(expectSameBits(c, ref, got), "differs from the CPU");
  compareCase(c, ref, got);
  float x;
  std::memcpy(&x, got[c.outs[0]].data(), sizeof x);
  x = x * 1.01f + 0.01f;
  std::memcpy(got[c.outs[0]].data(), &x, sizeof x);
  EXPECT_NONFATAL_FAILURE(compareCase(c, ref, got), "element 0");
}

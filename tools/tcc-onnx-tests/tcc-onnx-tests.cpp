//===- tcc-onnx-tests.cpp - The ONNX backend test suite through tcc -------===//
//
//   tcc-onnx-tests [--data DIR] [--filter REGEX] [--verbose] [--self-test]
//
// Runs, forward only, every test of libonnx-testdata's node,
// pytorch-converted and pytorch-operator suites (see BackendTest.h for how a
// test runs and the two rules that make its inputs static). A test whose
// import fails on something the importer reports as unsupported is counted,
// not failed; every other failure is a bug. Prints each failure, a histogram
// of the unsupported features (top 20) and, as its last line,
//
//   N passed, M failed, K unsupported
//
// Exits 1 when a test failed. --self-test instead checks that the runner can
// fail: every selected test that passes must fail once one of its expected
// tensors is perturbed.
//
//===----------------------------------------------------------------------===//
#include "tools/tcc-onnx-tests/BackendTest.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <regex>

#ifndef TCC_ONNX_TESTDATA_DIR
#define TCC_ONNX_TESTDATA_DIR "/usr/share/libonnx-testdata/data"
#endif

using namespace tcc::onnxtests;
namespace cl = llvm::cl;

static cl::opt<std::string>
    dataDir("data", cl::init(TCC_ONNX_TESTDATA_DIR),
            cl::desc("Root of the ONNX backend test data"),
            cl::value_desc("dir"));
static cl::list<std::string>
    suites("suites", cl::CommaSeparated,
           cl::desc("Suites under --data to run (default: node, "
                    "pytorch-converted, pytorch-operator)"));
static cl::opt<std::string>
    filter("filter", cl::init(""),
           cl::desc("Run only tests whose id (suite/test_name) matches this "
                    "ECMAScript regex (searched, not anchored)"),
           cl::value_desc("regex"));
static cl::opt<bool> verbose("verbose",
                             cl::desc("Print every test's outcome and the "
                                      "diagnostics of failures"));
static cl::opt<bool> noEager("no-eager",
                             cl::desc("Run only the compiled Session"));
static cl::opt<double>
    rtolOpt("rtol", cl::init(1e-3),
            cl::desc("Relative tolerance for float outputs"));
static cl::opt<double>
    atolOpt("atol", cl::init(1e-7),
            cl::desc("Absolute tolerance for float outputs"));
static cl::opt<bool>
    selfTest("self-test",
             cl::desc("Check that the runner fails: perturb an expected "
                      "tensor of every passing test and require a mismatch"));

/// Diagnostics, indented under a test's line.
static void printIndented(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.rtrim().split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (!line.empty())
      llvm::outs() << "    " << line << "\n";
}

static void printHistogram(const std::map<std::string, int> &features) {
  if (features.empty())
    return;
  std::vector<std::pair<std::string, int>> sorted(features.begin(),
                                                  features.end());
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const auto &a, const auto &b) { return a.second > b.second; });
  size_t shown = std::min<size_t>(sorted.size(), 20);
  llvm::outs() << "unsupported, by what the importer lacks (top " << shown
               << " of " << sorted.size() << "; tests):\n";
  for (size_t i = 0; i < shown; ++i)
    llvm::outs() << llvm::format("  %5d  ", sorted[i].second) << sorted[i].first
                 << "\n";
}

/// --self-test: every test that passes must fail, on a mismatch, once an
/// expected tensor is perturbed.
static int runSelfTest(const std::vector<BackendTest> &tests,
                       const RunOptions &opts) {
  RunOptions perturbed = opts;
  perturbed.perturb = true;
  int checked = 0, wrong = 0;
  for (const BackendTest &test : tests) {
    if (runBackendTest(test, opts).outcome != Outcome::Passed)
      continue;
    TestResult r = runBackendTest(test, perturbed);
    if (!r.perturbed)
      continue; // nothing finite to change (e.g. an empty output)
    ++checked;
    if (r.outcome == Outcome::Failed && r.mismatch) {
      if (verbose)
        llvm::outs() << "ok " << test.id << ": " << r.message << "\n";
      continue;
    }
    ++wrong;
    llvm::outs() << "SELF-TEST FAILED " << test.id
                 << ": a perturbed expected tensor was "
                 << (r.outcome == Outcome::Passed ? "accepted"
                                                  : "not reported as a "
                                                    "mismatch: " +
                                                        r.message)
                 << "\n";
  }
  if (checked == 0) {
    llvm::outs() << "self-test: no passing test to perturb (check --filter)\n";
    return 1;
  }
  llvm::outs() << "self-test: " << checked - wrong << " of " << checked
               << " perturbed tests reported a mismatch\n";
  return wrong ? 1 : 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "tcc-onnx-tests: runs the ONNX backend node tests through tcc "
      "(import, lower @forward, compiled and eager Session)\n");
  // The tests are tiny: one BLAS thread avoids pool start-up per session.
  setenv("TCC_NUM_THREADS", "1", /*overwrite=*/0);

  std::regex pattern;
  try {
    pattern = std::regex(filter.getValue(), std::regex::ECMAScript);
  } catch (const std::regex_error &e) {
    llvm::errs() << "tcc-onnx-tests: error: --filter '" << filter
                 << "' is not a valid regex: " << e.what() << "\n";
    return 2;
  }
  std::vector<std::string> suiteNames(suites.begin(), suites.end());
  if (suiteNames.empty())
    suiteNames = {"node", "pytorch-converted", "pytorch-operator"};
  std::vector<BackendTest> all, tests;
  std::string error;
  if (!discoverTests(dataDir, suiteNames, all, error)) {
    llvm::errs() << "tcc-onnx-tests: error: " << error << "\n";
    return 2;
  }
  for (BackendTest &t : all)
    if (std::regex_search(t.id, pattern))
      tests.push_back(std::move(t));
  if (tests.empty()) {
    llvm::errs() << "tcc-onnx-tests: error: no test matches --filter '"
                 << filter << "'\n";
    return 2;
  }

  RunOptions opts;
  opts.tolerance.rtol = rtolOpt;
  opts.tolerance.atol = atolOpt;
  opts.eager = !noEager;
  if (selfTest)
    return runSelfTest(tests, opts);

  auto start = std::chrono::steady_clock::now();
  int passed = 0, failed = 0, unsupported = 0;
  std::map<std::string, int> features;
  for (const BackendTest &test : tests) {
    TestResult r = runBackendTest(test, opts);
    switch (r.outcome) {
    case Outcome::Passed:
      ++passed;
      if (verbose)
        llvm::outs() << "PASS " << test.id << "\n";
      break;
    case Outcome::Unsupported:
      ++unsupported;
      ++features[r.feature];
      if (verbose)
        llvm::outs() << "UNSUPPORTED " << test.id << ": " << r.feature << "\n";
      break;
    case Outcome::Failed:
      ++failed;
      llvm::outs() << "FAIL " << test.id << ": " << r.message << "\n";
      printIndented(r.diagnostics);
      break;
    }
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  printHistogram(features);
  llvm::outs() << llvm::format("ran %zu tests in %.1f s\n", tests.size(),
                               seconds);
  llvm::outs() << passed << " passed, " << failed << " failed, " << unsupported
               << " unsupported\n";
  llvm::outs().flush();
  return failed ? 1 : 0;
}

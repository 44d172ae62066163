//===- FastMathTest.cpp - The generated kernels' erf, tanh and exp --------===//
//
// The prelude's fast functions (runtime/core/prelude/FastMath.h) as the host
// compiler builds them for each ISA this CPU runs: their largest error
// against double-precision libm over dense sweeps, their special values,
// and that the ISA does not change a bit where both have fused
// multiply-adds (x86-64-v3 and -v4: the unit is built without contraction,
// so a wider vector computes each element the same way).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/FusedCodegenInternal.h"
#include "compiler/codegen/HostCompile.h"
#include "runtime/core/abi/FusedAbi.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <unistd.h>
#include <vector>

namespace {

using Fn = void (*)(const float *, float *, long, int);

/// The prelude's exp, erf and tanh (fn 0, 1, 2) over an array, compiled for
/// `isa`; null (with a test failure) when that fails.
struct Lib {
  void *so = nullptr;
  Fn fn = nullptr;
  explicit Lib(const std::string &isa) {
    std::string src =
        std::string(::tcc::fusedPrelude()) +
        "extern \"C\" void tcc_test_fn(const float *x, float *y, long n, int "
        "f) {\n"
        "  if (f == 0) for (long i = 0; i < n; ++i) y[i] = tcc_exp(x[i]);\n"
        "  if (f == 1) for (long i = 0; i < n; ++i) y[i] = tcc_erf(x[i]);\n"
        "  if (f == 2) for (long i = 0; i < n; ++i) y[i] = tcc_tanh(x[i]);\n"
        "}\n";
    ::tcc::HostLibrary lib;
    std::string err;
    if (!::tcc::compileHostLibrary(src, lib, err, isa)) {
      ADD_FAILURE() << err;
      return;
    }
    char path[] = "/tmp/tcc-fastmath-test-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, lib.bytes.data(), lib.bytes.size()) !=
                      static_cast<ssize_t>(lib.bytes.size())) {
      ADD_FAILURE() << "cannot write " << path;
      return;
    }
    close(fd);
    so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    unlink(path);
    if (!so) {
      ADD_FAILURE() << dlerror();
      return;
    }
    fn = reinterpret_cast<Fn>(dlsym(so, "tcc_test_fn"));
  }
  ~Lib() {
    if (so)
      dlclose(so);
  }
  std::vector<float> run(const std::vector<float> &x, int f) const {
    std::vector<float> y(x.size());
    fn(x.data(), y.data(), static_cast<long>(x.size()), f);
    return y;
  }
};

/// Dense samples of [-lim, lim] and the powers of two from 2^-40 down.
std::vector<float> sweep(float lim, int n) {
  std::vector<float> x;
  for (int i = -n; i <= n; ++i)
    x.push_back(lim * static_cast<float>(i) / static_cast<float>(n));
  for (int e = 1; e <= 40; ++e) {
    x.push_back(std::ldexp(1.0f, -e));
    x.push_back(-std::ldexp(1.0f, -e));
  }
  return x;
}

struct Err {
  double rel = 0, abs = 0;
};

Err worst(const std::vector<float> &x, const std::vector<float> &y,
          double (*ref)(double)) {
  Err e;
  for (size_t i = 0; i < x.size(); ++i) {
    double want = ref(x[i]), d = std::fabs(y[i] - want);
    e.abs = std::max(e.abs, d);
    if (want != 0)
      e.rel = std::max(e.rel, d / std::fabs(want));
  }
  return e;
}

std::vector<std::string> isasHere() {
  std::vector<std::string> out;
  for (const char *isa : {"x86-64-v3", "x86-64-v4"})
    if (::tcc::rt::cpuSupportsIsa(isa))
      out.push_back(isa);
  return out;
}

} // namespace

// The bounds FastMath.h states, with a little room, at every ISA this CPU
// runs (the baseline's multiply-adds round twice).
TEST(FastMath, ErrorBoundsAgainstLibm) {
  std::vector<std::string> isas = isasHere();
  isas.insert(isas.begin(), "generic");
  std::vector<float> x = sweep(8.0f, 400000);
  for (const std::string &isa : isas) {
    Lib lib(isa);
    ASSERT_TRUE(lib.fn) << isa;
    // Without FMA (the baseline) each multiply-add rounds twice.
    double erfBound = isa == "generic" ? 4e-7 : 3.5e-7;
    Err erf = worst(x, lib.run(x, 1), std::erf);
    EXPECT_LT(erf.rel, erfBound) << isa;
    EXPECT_LT(erf.abs, erfBound) << isa;
    Err tanh = worst(x, lib.run(x, 2), std::tanh);
    EXPECT_LT(tanh.rel, 5e-7) << isa;
    std::vector<float> xe = sweep(87.0f, 400000);
    EXPECT_LT(worst(xe, lib.run(xe, 0), std::exp).rel, 3e-7) << isa;
  }
}

TEST(FastMath, ErfSpecialValues) {
  std::vector<std::string> isas = isasHere();
  if (isas.empty())
    GTEST_SKIP() << "no x86-64-v3 here";
  Lib lib(isas.back());
  ASSERT_TRUE(lib.fn);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> y =
      lib.run({0.0f, -0.0f, inf, -inf, std::nanf(""), 3.9f, 100.0f}, 1);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_TRUE(std::signbit(y[1]));
  EXPECT_EQ(y[2], 1.0f);
  EXPECT_EQ(y[3], -1.0f);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_LE(y[5], 1.0f);
  EXPECT_EQ(y[6], 1.0f);
}

// x86-64-v4's code gives x86-64-v3's bits, so an artifact's results do not
// depend on which of the two --cpu-isa picked.
TEST(FastMath, WiderIsaGivesTheSameBits) {
  std::vector<std::string> isas = isasHere();
  if (isas.size() < 2)
    GTEST_SKIP() << "needs x86-64-v4";
  Lib v3(isas[0]), v4(isas[1]);
  ASSERT_TRUE(v3.fn && v4.fn);
  std::vector<float> x = sweep(90.0f, 200000);
  for (int f = 0; f < 3; ++f) {
    std::vector<float> a = v3.run(x, f), b = v4.run(x, f);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
        << "function " << f;
  }
}

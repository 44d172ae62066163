//===- CudaEmulator.h - Runs generated CUDA kernels on the CPU, for tests -===//
//
// No GPU is needed to check what the generated CUDA C computes: the text
// NVRTC compiles is also compiled by the host C++ compiler after this shim,
// which defines the CUDA names the kernels use. Each warp runs as 32 real
// threads (one per lane) that meet at a barrier for every shuffle and
// __syncwarp, so warp-level code (butterflies, lane-owned arrays, shuffles
// from the owning lane, lane 0 stores) executes with its real semantics;
// warps and blocks run one after the other. Device math is the host libm's,
// without multiply-add contraction (NVRTC gets --fmad=false).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_CUDAEMULATOR_H
#define TCC_TESTS_UNIT_CUDAEMULATOR_H

#include "runtime/core/Artifact.h"

#include <cstdint>
#include <dlfcn.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace tcc::test {

/// Source that goes before the generated CUDA source. It also defines
///   extern "C" void tcc_emu_launch(void (*kernel)(void *const *),
///                                  void *const *args, unsigned grid,
///                                  unsigned block);
inline const char *cudaEmulatorShim() {
  return R"TCCEMU(
#include <math.h>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)

struct tcc_dim3 { unsigned x = 0, y = 1, z = 1; };
static thread_local tcc_dim3 threadIdx, blockIdx;
static tcc_dim3 blockDim, gridDim;

static inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}
static inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}

namespace {
// 32 lanes meet here; the generation count makes it reusable.
struct WarpBarrier {
  std::mutex m;
  std::condition_variable cv;
  int count = 0, gen = 0;
  void wait() {
    std::unique_lock<std::mutex> l(m);
    int g = gen;
    if (++count == 32) {
      count = 0;
      ++gen;
      cv.notify_all();
    } else {
      cv.wait(l, [&] { return gen != g; });
    }
  }
};
WarpBarrier tcc_bar;
unsigned long long tcc_slots[32];

template <class T> T tcc_exchange(T v, int src) {
  std::memcpy(&tcc_slots[threadIdx.x & 31], &v, sizeof v);
  tcc_bar.wait();
  T r;
  std::memcpy(&r, &tcc_slots[src & 31], sizeof r);
  tcc_bar.wait();
  return r;
}
} // namespace

template <class T> static T __shfl_sync(unsigned, T v, int src) {
  return tcc_exchange(v, src);
}
template <class T> static T __shfl_xor_sync(unsigned, T v, int mask) {
  return tcc_exchange(v, (int)(threadIdx.x & 31) ^ mask);
}
static inline void __syncwarp() { tcc_bar.wait(); }
static inline unsigned long long atomicCAS(unsigned long long *p,
                                           unsigned long long expected,
                                           unsigned long long desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  return expected;
}

extern "C" void tcc_emu_launch(void (*kernel)(void *const *),
                               void *const *args, unsigned grid,
                               unsigned block) {
  gridDim.x = grid;
  blockDim.x = block;
  std::vector<std::thread> lanes;
  for (unsigned lane = 0; lane < 32; ++lane)
    lanes.emplace_back([=] {
      for (unsigned b = 0; b < grid; ++b)
        for (unsigned w = 0; w < block / 32; ++w) {
          blockIdx.x = b;
          threadIdx.x = w * 32 + lane;
          kernel(args);
          tcc_bar.wait(); // the warp's lanes finish together
        }
    });
  for (std::thread &t : lanes)
    t.join();
}
)TCCEMU";
}

/// `extern "C" void emu_<symbol>(void *const *args)` calling `symbol` with
/// args[i] cast to its parameter type (operands, then partials and err), for
/// the kernel and its fin.
inline std::string cudaEmulatorWrappers(const rt::DeviceKernel &k) {
  std::string params;
  size_t i = 0;
  auto arg = [&](const std::string &type) {
    params += (params.empty() ? "(" : ", ") + std::string("(") + type + ")a[" +
              std::to_string(i++) + "]";
  };
  auto type = [](rt::DType t) {
    return t == rt::DType::F32                           ? "float *"
           : t == rt::DType::BF16 || t == rt::DType::F16 ? "unsigned short *"
                                                         : "long long *";
  };
  for (const auto &in : k.inputs)
    arg(std::string("const ") + type(in.first));
  for (const auto &out : k.outputs)
    arg(type(out.first));
  arg("double *");
  arg("long long *");
  params += ")";
  std::string s;
  for (const std::string &sym : {k.symbol, k.finSymbol})
    if (!sym.empty())
      s += "extern \"C\" void emu_" + sym + "(void *const *a) { " + sym +
           params + "; }\n";
  return s;
}

/// A shared object (the emulated library) loaded from bytes through a
/// private temporary file.
struct SharedObject {
  void *handle = nullptr;
  explicit SharedObject(const std::vector<uint8_t> &bytes) {
    char path[] = "/tmp/tcc-cuda-emu-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
      return;
    bool ok = write(fd, bytes.data(), bytes.size()) == (ssize_t)bytes.size();
    close(fd);
    if (ok)
      handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    unlink(path);
  }
  ~SharedObject() {
    if (handle)
      dlclose(handle);
  }
  SharedObject(const SharedObject &) = delete;
  SharedObject &operator=(const SharedObject &) = delete;
  void *sym(const std::string &name) const {
    return handle ? dlsym(handle, name.c_str()) : nullptr;
  }
};

/// `emu_<symbol>` and `tcc_emu_launch` of the emulated library.
using EmuWrapper = void (*)(void *const *);
using EmuLaunch = void (*)(EmuWrapper, void *const *, unsigned, unsigned);

/// The ABI's grid: a warp per row, or a thread per element.
inline unsigned abiGrid(const rt::DeviceKernel &k) {
  int64_t threads = k.mapping == "rows" ? k.rows * 32 : k.rows * k.cols;
  return (unsigned)((threads + k.block - 1) / k.block);
}

} // namespace tcc::test

#endif // TCC_TESTS_UNIT_CUDAEMULATOR_H

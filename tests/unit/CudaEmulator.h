//===- CudaEmulator.h - Runs generated CUDA kernels on the CPU, for tests -===//
//
// No GPU is needed to check what the generated CUDA C computes: the text
// NVRTC compiles is also compiled by the host C++ compiler after this shim,
// which defines the CUDA names the kernels use. Every thread of a block is
// a real thread; a warp's 32 meet at a barrier for every shuffle and
// __syncwarp, and the whole block at every __syncthreads, so warp- and
// block-level code (butterflies, lane-owned arrays, shuffles from the
// owning lane, lane 0 stores, shared-memory rows and reductions) executes
// with its real semantics; blocks run one after the other, each with fresh
// dynamic shared memory (all bytes 0xff, so reading what no thread wrote
// shows as NaN). Device math is the host libm's, without multiply-add
// contraction (NVRTC gets --fmad=false).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_CUDAEMULATOR_H
#define TCC_TESTS_UNIT_CUDAEMULATOR_H

#include "runtime/core/Artifact.h"

#include <algorithm>
#include <cstdint>
#include <dlfcn.h>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace tcc::test {

/// Source that goes before the generated CUDA source. It also defines
///   extern "C" void tcc_emu_launch(void (*kernel)(void *const *),
///                                  void *const *args, unsigned grid,
///                                  unsigned block, unsigned smem);
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
#define __launch_bounds__(...)
// A block runs alone, so a function's statics are its shared memory.
#define __shared__ static

struct tcc_dim3 { unsigned x = 0, y = 1, z = 1; };
static thread_local tcc_dim3 threadIdx, blockIdx;
static tcc_dim3 blockDim, gridDim;
struct alignas(16) uint4 { unsigned x, y, z, w; };
static unsigned char *tcc_emu_smem;
#define TCC_SMEM_BYTES(name) unsigned char *const name = tcc_emu_smem

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
// `n` threads meet here; the generation count makes it reusable.
struct Barrier {
  std::mutex m;
  std::condition_variable cv;
  int n = 32, count = 0, gen = 0;
  void wait() {
    std::unique_lock<std::mutex> l(m);
    int g = gen;
    if (++count == n) {
      count = 0;
      ++gen;
      cv.notify_all();
    } else {
      cv.wait(l, [&] { return gen != g; });
    }
  }
};
Barrier tcc_warp_bar[32], tcc_block_bar; // per warp of the block; the block
unsigned long long tcc_slots[32][32];    // [warp][lane]

template <class T> T tcc_exchange(T v, int src) {
  const unsigned w = threadIdx.x >> 5;
  std::memcpy(&tcc_slots[w][threadIdx.x & 31], &v, sizeof v);
  tcc_warp_bar[w].wait();
  T r;
  std::memcpy(&r, &tcc_slots[w][src & 31], sizeof r);
  tcc_warp_bar[w].wait();
  return r;
}
} // namespace

template <class T> static T __shfl_sync(unsigned, T v, int src) {
  return tcc_exchange(v, src);
}
template <class T> static T __shfl_xor_sync(unsigned, T v, int mask) {
  return tcc_exchange(v, (int)(threadIdx.x & 31) ^ mask);
}
static inline void __syncwarp() { tcc_warp_bar[threadIdx.x >> 5].wait(); }
static inline void __syncthreads() { tcc_block_bar.wait(); }
static inline unsigned long long atomicCAS(unsigned long long *p,
                                           unsigned long long expected,
                                           unsigned long long desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  return expected;
}

extern "C" void tcc_emu_launch(void (*kernel)(void *const *),
                               void *const *args, unsigned grid,
                               unsigned block, unsigned smem) {
  gridDim.x = grid;
  blockDim.x = block;
  tcc_block_bar.n = (int)block;
  std::vector<uint4> shared((smem + 15) / 16 + 1);
  tcc_emu_smem = reinterpret_cast<unsigned char *>(shared.data());
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < block; ++t)
    threads.emplace_back([=, &shared] {
      for (unsigned b = 0; b < grid; ++b) {
        if (t == 0)
          std::memset(shared.data(), 0xff, shared.size() * sizeof(uint4));
        tcc_block_bar.wait(); // the block's memory is fresh
        blockIdx.x = b;
        threadIdx.x = t;
        kernel(args);
        tcc_block_bar.wait(); // the block's threads finish together
      }
    });
  for (std::thread &t : threads)
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

/// The wrappers of every kernel of a launch table, each symbol once (a
/// repeated region launches an earlier kernel's symbols: KernelDedup.h).
inline std::string
cudaEmulatorWrappers(const std::vector<rt::DeviceKernel> &kernels) {
  std::string s;
  std::set<std::string> done;
  for (const rt::DeviceKernel &k : kernels)
    if (done.insert(k.symbol).second)
      s += cudaEmulatorWrappers(k);
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
using EmuLaunch = void (*)(EmuWrapper, void *const *, unsigned, unsigned,
                           unsigned);

/// The ABI's grid: a warp per row, a block per row (or, for a strided
/// block_rows kernel, gridPerSm blocks a multiprocessor of a GPU of `sms`),
/// a block per row slice (column sums), or a thread per element.
inline unsigned abiGrid(const rt::DeviceKernel &k, int64_t sms = 2) {
  if (k.colSums)
    return (unsigned)k.slices();
  if (k.mapping == "block_rows")
    return (unsigned)(k.gridPerSm ? std::min(k.rows, k.gridPerSm * sms)
                                  : k.rows);
  int64_t threads = k.mapping == "rows" ? k.rows * 32 : k.rows * k.cols;
  return (unsigned)((threads + k.block - 1) / k.block);
}

/// The ABI's launch of a kernel's fin: (grid, block).
inline std::pair<unsigned, unsigned> abiFin(const rt::DeviceKernel &k) {
  if (k.colSums)
    return {(unsigned)((k.colSums * k.cols + 31) / 32),
            (unsigned)rt::kColFinThreads};
  return {1u, (unsigned)k.block};
}

} // namespace tcc::test

#endif // TCC_TESTS_UNIT_CUDAEMULATOR_H

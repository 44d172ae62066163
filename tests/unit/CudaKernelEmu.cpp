//===- CudaKernelEmu.cpp - Fibers, barriers and cudart for the emulator ---===//
#include "CudaKernelEmu.h"

#include <ucontext.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef __SANITIZE_THREAD__
#include <sanitizer/tsan_interface.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace tcc_emu {

Index threadIndex, blockIndex;
dim3 blockDims, gridDims;

namespace {
// The CUDA threads of a block are fibers (ucontext) on the calling thread,
// switched cooperatively at barriers: 1024 threads cost 1024 small stacks,
// not 1024 OS threads, and a run is deterministic.
enum class State { Runnable, Waiting, Done };

struct Fiber {
  ucontext_t ctx;
  std::unique_ptr<char[]> stack;
  State state = State::Done;
  int group = 0, gen = 0; // the barrier it waits at, and its generation
  Index tid;
  void *asanFake = nullptr; // sanitizer bookkeeping (see enterFiber)
  void *tsanFiber = nullptr;
};

/// A barrier: group 0 is the block, group 1 + w warp w.
struct Group {
  int count = 0, arrived = 0, gen = 0;
};

constexpr size_t kStackBytes = 256 << 10;
ucontext_t scheduler;
std::vector<Fiber> fibers;
std::vector<Group> groups;
int current = 0;
const std::function<void()> *body = nullptr;
unsigned long long slots[1024];
unsigned char gatherSlots[1024][64];

// Sanitizers must be told about stack switches (ASan keeps a shadow of
// each stack, TSan a clock per thread); without a sanitizer these are
// plain swapcontext calls.
#ifdef __SANITIZE_ADDRESS__
const void *schedulerStack = nullptr; // learnt on the first switch
size_t schedulerStackSize = 0;
#endif
#ifdef __SANITIZE_THREAD__
void *schedulerFiber = nullptr;
#endif

/// Scheduler -> fiber f, until it switches back.
void enterFiber(Fiber &f) {
#ifdef __SANITIZE_ADDRESS__
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f.stack.get(), kStackBytes);
#endif
#ifdef __SANITIZE_THREAD__
  if (!schedulerFiber)
    schedulerFiber = __tsan_get_current_fiber();
  if (!f.tsanFiber)
    f.tsanFiber = __tsan_create_fiber(0);
  __tsan_switch_to_fiber(f.tsanFiber, 0);
#endif
  swapcontext(&scheduler, &f.ctx);
#ifdef __SANITIZE_ADDRESS__
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

/// In a fiber, right after it starts or resumes.
void resumed(void *asanFake) {
#ifdef __SANITIZE_ADDRESS__
  __sanitizer_finish_switch_fiber(asanFake, &schedulerStack,
                                  &schedulerStackSize);
#else
  (void)asanFake;
#endif
}

/// Fiber -> scheduler; a finished fiber never resumes.
void leaveFiber(bool finished) {
  Fiber &f = fibers[current];
  (void)finished;
#ifdef __SANITIZE_ADDRESS__
  __sanitizer_start_switch_fiber(finished ? nullptr : &f.asanFake,
                                 schedulerStack, schedulerStackSize);
#endif
#ifdef __SANITIZE_THREAD__
  __tsan_switch_to_fiber(schedulerFiber, 0);
#endif
  swapcontext(&f.ctx, &scheduler);
  resumed(fibers[current].asanFake);
}

void fiberMain() {
  resumed(nullptr);
  (*body)();
  fibers[current].state = State::Done;
  leaveFiber(true);
}

void wait(int group) {
  Group &g = groups[group];
  if (++g.arrived == g.count) { // the last one releases the others
    g.arrived = 0;
    ++g.gen;
    return;
  }
  Fiber &f = fibers[current];
  f.state = State::Waiting;
  f.group = group;
  f.gen = g.gen;
  leaveFiber(false);
}

int linearThread() {
  return static_cast<int>(threadIndex.x + threadIndex.y * blockDims.x +
                          threadIndex.z * blockDims.x * blockDims.y);
}

void runBlock(int threads, dim3 block) {
  for (int t = 0; t < threads; ++t) {
    Fiber &f = fibers[t];
    if (!f.stack)
      f.stack.reset(new char[kStackBytes]);
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.get();
    f.ctx.uc_stack.ss_size = kStackBytes;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiberMain, 0);
    f.state = State::Runnable;
    f.tid = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
  }
  for (Group &g : groups)
    g.arrived = 0;
  // Each warp runs as far as it can before the next one starts, and the
  // order of the warps alternates: a warp racing ahead of the others is
  // what a missing __syncthreads lets happen on a GPU, and here it then
  // changes a result instead of passing by luck.
  int done = 0, warps = (threads + 31) / 32;
  for (bool reverse = false; done < threads; reverse = !reverse) {
    bool ranAny = false;
    for (int i = 0; i < warps; ++i) {
      int w = reverse ? warps - 1 - i : i;
      for (bool ran = true; ran;) {
        ran = false;
        for (int t = 32 * w; t < std::min(threads, 32 * w + 32); ++t) {
          Fiber &f = fibers[t];
          if (f.state == State::Waiting && groups[f.group].gen != f.gen)
            f.state = State::Runnable;
          if (f.state != State::Runnable)
            continue;
          current = t;
          threadIndex = f.tid;
          enterFiber(f);
          ran = ranAny = true;
          done += f.state == State::Done;
        }
      }
    }
    if (!ranAny) {
      std::fprintf(stderr,
                   "CUDA emulator: a %s barrier is not reached by every "
                   "thread of block %u,%u,%u\n",
                   groups[fibers[current].group].count == threads
                       ? "__syncthreads"
                       : "warp",
                   blockIndex.x, blockIndex.y, blockIndex.z);
      std::abort();
    }
  }
}
} // namespace

namespace {
std::vector<unsigned char> sharedBytes; // dynamic shared memory (+ alignment)
unsigned char *sharedBase = nullptr;
} // namespace

unsigned char *dynamicShared() { return sharedBase; }

void launch(dim3 grid, dim3 block, const std::function<void()> &f,
            size_t smem) {
  int threads = static_cast<int>(block.x * block.y * block.z);
  if (threads < 1 || threads > 1024 || grid.x < 1 || grid.y < 1 || grid.z < 1) {
    std::fprintf(stderr,
                 "CUDA emulator: bad launch %ux%ux%u blocks of "
                 "%ux%ux%u threads\n",
                 grid.x, grid.y, grid.z, block.x, block.y, block.z);
    std::abort();
  }
  gridDims = grid;
  blockDims = block;
  body = &f;
  if (fibers.size() < 1024)
    fibers.resize(1024);
  groups.assign(1 + (threads + 31) / 32, Group{});
  groups[0].count = threads;
  sharedBytes.assign(smem + 128, 0);
  sharedBase = sharedBytes.data() +
               (128 - reinterpret_cast<uintptr_t>(sharedBytes.data()) % 128);
  for (int w = 0; w * 32 < threads; ++w) // a last, partial warp is smaller
    groups[1 + w].count = std::min(32, threads - 32 * w);
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        blockIndex = {bx, by, bz};
        if (smem)
          std::memset(sharedBase, 0xff, smem);
        runBlock(threads, block);
      }
}

void syncBlock() { wait(0); }

void syncWarp() { wait(1 + linearThread() / 32); }

unsigned long long exchangeXor(unsigned long long bits, int laneMask) {
  int t = linearThread(), warp = t / 32;
  slots[t] = bits;
  wait(1 + warp);
  unsigned long long r = slots[(t & ~31) | ((t & 31) ^ (laneMask & 31))];
  wait(1 + warp);
  return r;
}

void warpAllGather(const void *mine, size_t bytes, void *all) {
  if (bytes > sizeof gatherSlots[0]) {
    std::fprintf(stderr,
                 "CUDA emulator: warpAllGather of %zu bytes (at most "
                 "64)\n",
                 bytes);
    std::abort();
  }
  int t = linearThread(), warp = t / 32;
  std::memcpy(gatherSlots[t], mine, bytes);
  wait(1 + warp);
  for (int l = 0; l < 32; ++l)
    std::memcpy(static_cast<unsigned char *>(all) + l * bytes,
                gatherSlots[(t & ~31) + l], bytes);
  wait(1 + warp);
}

unsigned laneIndex() { return static_cast<unsigned>(linearThread() & 31); }

} // namespace tcc_emu

// The CUDA runtime calls of the launchers, on host memory.
cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t) {
  std::memset(p, value, n);
  return cudaSuccess;
}

cudaError_t cudaMemset2DAsync(void *p, size_t pitch, int value, size_t width,
                              size_t height, cudaStream_t) {
  for (size_t r = 0; r < height; ++r)
    std::memset(static_cast<char *>(p) + r * pitch, value, width);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                            cudaMemcpyKind, cudaStream_t) {
  std::memmove(dst, src, n);
  return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind, cudaStream_t) {
  for (size_t r = 0; r < height; ++r)
    std::memcpy(static_cast<char *>(dst) + r * dpitch,
                static_cast<const char *>(src) + r * spitch, width);
  return cudaSuccess;
}

cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaFuncSetAttribute(const void *, cudaFuncAttribute, int) {
  return cudaSuccess;
}
// The emulated GPU: compute capability 9.0 with an H100's 227 KiB of
// shared memory a block.
cudaError_t cudaGetDevice(int *device) {
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int) {
  *value = attr == cudaDevAttrComputeCapabilityMajor         ? 9
           : attr == cudaDevAttrMaxSharedMemoryPerBlockOptin ? 232448
                                                             : 0;
  return cudaSuccess;
}
const char *cudaGetErrorName(cudaError_t) { return "cudaErrorEmulated"; }
const char *cudaGetErrorString(cudaError_t) { return "emulated"; }

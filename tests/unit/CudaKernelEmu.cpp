//===- CudaKernelEmu.cpp - Fibers, barriers and cudart for the emulator ---===//
#include "CudaKernelEmu.h"

#include <cuda.h>

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
  int mbar = -1;          // or the mbarrier (index), and the parity
  unsigned parity = 0;    // of the phase it waits for
  Index tid;
  void *asanFake = nullptr; // sanitizer bookkeeping (see enterFiber)
  void *tsanFiber = nullptr;
};

/// A barrier: group 0 is the block, group 1 + w warp w, then group 1 +
/// warps + i warpgroup i.
struct Group {
  int count = 0, arrived = 0, gen = 0;
};

/// A copy: issued (its bytes read), then landed by the first wait on its
/// phase.
struct Copy {
  void *dst;
  std::vector<unsigned char> bytes;
};

/// An mbarrier of the running block (its 8 bytes hold the index + 1).
struct MBarrier {
  int count = 0, pending = 0;            // arrivals a phase, and still to come
  long long expected = 0, delivered = 0; // this phase's bytes
  unsigned phase = 0;                    // phases completed
  std::vector<Copy> inFlight, landing;   // this phase's, completed ones'
};
std::vector<MBarrier> mbarriers;

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
    f.mbar = -1;
    f.tid = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
  }
  for (Group &g : groups)
    g.arrived = 0;
  mbarriers.clear();
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
          if (f.state == State::Waiting &&
              (f.mbar >= 0 ? (mbarriers[f.mbar].phase & 1) != f.parity
                           : groups[f.group].gen != f.gen))
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
      for (int t = 0; t < threads; ++t)
        if (const Fiber &f = fibers[t];
            f.state == State::Waiting && f.mbar >= 0) {
          const MBarrier &b = mbarriers[f.mbar];
          std::fprintf(stderr,
                       "CUDA emulator: an mbarrier phase of block %u,%u,%u "
                       "never completes: %d of %d arrivals missing, %lld "
                       "bytes expected, %lld delivered\n",
                       blockIndex.x, blockIndex.y, blockIndex.z, b.pending,
                       b.count, b.expected, b.delivered);
          std::abort();
        }
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
  wgmmaBlockEnded();
  // A block that ends before its copies are waited for lets a GPU write
  // its shared memory after it is gone (another block's, by then).
  for (const MBarrier &b : mbarriers)
    if (!b.inFlight.empty() || !b.landing.empty()) {
      std::fprintf(stderr,
                   "CUDA emulator: block %u,%u,%u ends with tensor copies "
                   "no thread waited for\n",
                   blockIndex.x, blockIndex.y, blockIndex.z);
      std::abort();
    }
}
} // namespace

namespace {
std::vector<unsigned char> sharedBytes; // dynamic shared memory (+ alignment)
unsigned char *sharedBase = nullptr;
size_t sharedSize = 0;
/// The window address of the first byte of dynamic shared memory.
constexpr unsigned kWindowStart = 0x80;
int warpCount = 0; // of the launch's blocks

[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "CUDA emulator: %s (block %u,%u,%u, thread %d)\n", what,
               blockIndex.x, blockIndex.y, blockIndex.z, linearThread());
  std::abort();
}

/// Whether [p, p + bytes) lies in the block's dynamic shared memory.
bool inShared(const void *p, size_t bytes) {
  auto *c = static_cast<const unsigned char *>(p);
  return c >= sharedBase && c + bytes <= sharedBase + sharedSize;
}

/// Fails unless `bar` is 8 aligned bytes of shared memory (an mbarrier).
void checkBarrierWord(const void *bar) {
  if (!inShared(bar, 8) || reinterpret_cast<uintptr_t>(bar) % 8 != 0)
    fail("an mbarrier that is not 8 aligned bytes of shared memory");
}

MBarrier &mbarrierAt(void *bar) {
  checkBarrierWord(bar);
  unsigned long long id;
  std::memcpy(&id, bar, 8);
  if (id == 0 || id > mbarriers.size())
    fail("an mbarrier used before mbarInit");
  return mbarriers[id - 1];
}

/// Completes b's phase when its arrivals and bytes are all in.
void advance(MBarrier &b) {
  if (b.pending > 0)
    return;
  if (b.delivered > b.expected) {
    std::fprintf(stderr,
                 "CUDA emulator: tensor copies delivered %lld bytes to an "
                 "mbarrier phase that expects %lld (a GPU never completes "
                 "it)\n",
                 b.delivered, b.expected);
    std::abort();
  }
  if (b.delivered < b.expected)
    return;
  for (Copy &c : b.inFlight)
    b.landing.push_back(std::move(c));
  b.inFlight.clear();
  b.expected = b.delivered = 0;
  b.pending = b.count;
  ++b.phase;
}
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
  warpCount = (threads + 31) / 32;
  groups.assign(1 + warpCount + (threads + 127) / 128, Group{});
  groups[0].count = threads;
  for (int i = 0; i * 128 < threads; ++i) // warpgroups
    groups[1 + warpCount + i].count = std::min(128, threads - 128 * i);
  sharedBytes.assign(smem + 128, 0);
  sharedSize = smem;
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

unsigned threadInBlock() { return static_cast<unsigned>(linearThread()); }

void warpgroupAllGather(const void *mine, size_t bytes, void *all) {
  if (bytes > sizeof gatherSlots[0])
    fail("a warpgroup gather of more than 64 bytes a thread");
  int t = linearThread(), group = 1 + warpCount + t / 128;
  if (groups[group].count != 128)
    fail("a warpgroup collective in a block whose threads are not whole "
         "warpgroups of 128");
  std::memcpy(gatherSlots[t], mine, bytes);
  wait(group);
  for (int l = 0; l < 128; ++l)
    std::memcpy(static_cast<unsigned char *>(all) + l * bytes,
                gatherSlots[(t & ~127) + l], bytes);
  wait(group);
}

unsigned sharedAddress(const void *p) {
  auto *c = static_cast<const unsigned char *>(p);
  if (c < sharedBase || c > sharedBase + sharedSize)
    fail("a shared-memory address of a pointer outside shared memory");
  return kWindowStart + static_cast<unsigned>(c - sharedBase);
}

unsigned char *sharedAt(unsigned at, size_t bytes) {
  unsigned char *p = sharedBase + (static_cast<long long>(at) - kWindowStart);
  if (at < kWindowStart || !inShared(p, bytes))
    fail("a shared-memory window address outside the block's shared memory");
  return p;
}

void mbarInit(void *bar, unsigned count) {
  checkBarrierWord(bar);
  if (count < 1)
    fail("mbarInit with no arrivals");
  MBarrier b;
  b.count = b.pending = static_cast<int>(count);
  mbarriers.push_back(b);
  unsigned long long id = mbarriers.size();
  std::memcpy(bar, &id, 8);
}

void mbarArriveExpectTx(void *bar, unsigned bytes) {
  MBarrier &b = mbarrierAt(bar);
  b.expected += bytes;
  --b.pending;
  advance(b);
}

namespace {
/// The emulator's CUtensorMap contents (encodeTileMap).
struct TileMap {
  const unsigned char *base;
  unsigned long long dims[3], strides[2];
  unsigned box[3], elementBytes, swizzle;
};
static_assert(sizeof(TileMap) <= sizeof(CUtensorMap),
              "a tile map fits a CUtensorMap");
} // namespace

void encodeTileMap(void *map, const void *base, const unsigned long long *dims,
                   const unsigned long long *strides, const unsigned *box,
                   unsigned elementBytes, unsigned swizzle) {
  if (swizzle != 0 && (swizzle != 128 || box[0] * elementBytes != 128)) {
    std::fprintf(stderr,
                 "CUDA emulator: a tensor map of %u-byte swizzle and %u-byte "
                 "box rows (the emulator models none, or 128 with rows of "
                 "128 bytes)\n",
                 swizzle, box[0] * elementBytes);
    std::abort();
  }
  TileMap m{static_cast<const unsigned char *>(base),
            {dims[0], dims[1], dims[2]},
            {strides[0], strides[1]},
            {box[0], box[1], box[2]},
            elementBytes,
            swizzle};
  std::memset(map, 0, sizeof(CUtensorMap));
  std::memcpy(map, &m, sizeof m);
}

void tensorCopy3dToShared(void *dst, const void *map, int c0, int c1, int c2,
                          void *bar) {
  TileMap m;
  std::memcpy(&m, map, sizeof m);
  const size_t row = size_t(m.box[0]) * m.elementBytes,
               bytes = row * m.box[1] * m.box[2];
  if (!inShared(dst, bytes))
    fail("a tensor copy to outside the block's shared memory");
  if (sharedAddress(dst) % 128 != 0)
    fail("a tensor copy to shared memory that is not 128-byte aligned");
  // The swizzle is of the shared address's bits 7-9 (the row in its
  // 1024-byte block), which the copy engine takes as 0 at dst.
  if (m.swizzle && sharedAddress(dst) % 1024 != 0)
    fail("a 128-byte-swizzled tensor copy to shared memory that is not "
         "1024-byte aligned");
  MBarrier &b = mbarrierAt(bar);
  Copy c{dst, std::vector<unsigned char>(bytes, 0)};
  for (unsigned z = 0; z < m.box[2]; ++z)
    for (unsigned y = 0; y < m.box[1]; ++y)
      for (unsigned x = 0; x < m.box[0]; ++x) {
        long long gx = c0 + (long long)x, gy = c1 + (long long)y,
                  gz = c2 + (long long)z;
        if (gx < 0 || gy < 0 || gz < 0 || gx >= (long long)m.dims[0] ||
            gy >= (long long)m.dims[1] || gz >= (long long)m.dims[2])
          continue; // outside the tensor: zeros
        size_t at = (z * m.box[1] + y) * row + x * m.elementBytes;
        if (m.swizzle) // chunk (at >> 4) & 7 of row (at >> 7) & 7
          at ^= ((at >> 7) & 7) << 4;
        std::memcpy(c.bytes.data() + at,
                    m.base + gz * m.strides[1] + gy * m.strides[0] +
                        gx * m.elementBytes,
                    m.elementBytes);
      }
  b.inFlight.push_back(std::move(c));
  b.delivered += static_cast<long long>(bytes);
  advance(b);
}

void mbarWait(void *bar, unsigned parity) {
  MBarrier &b = mbarrierAt(bar);
  int index = static_cast<int>(&b - mbarriers.data());
  if ((b.phase & 1) == (parity & 1)) {
    Fiber &f = fibers[current];
    f.state = State::Waiting;
    f.mbar = index;
    f.parity = parity & 1;
    leaveFiber(false);
    fibers[current].mbar = -1;
  }
  MBarrier &done = mbarriers[index];
  for (const Copy &c : done.landing)
    std::memcpy(c.dst, c.bytes.data(), c.bytes.size());
  done.landing.clear();
}

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

//===- CnnPath.cpp - The CNN kernels' path and the oneDNN module ----------===//
#include "runtime/cpu/CnnPath.h"

#include "runtime/core/Backend.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace tcc::rt::cpu {

static std::atomic<int> pathSetting{-1}; // -1: TCC_CPU_CONV not read yet

static CnnPath pathFromEnv() {
  const char *env = std::getenv("TCC_CPU_CONV");
  if (!env || !*env || std::strcmp(env, "onednn") == 0)
    return CnnPath::OneDnn;
  if (std::strcmp(env, "im2col") == 0)
    return CnnPath::Reference;
  throw Error(std::string("TCC_CPU_CONV='") + env +
              "' is neither 'onednn' nor 'im2col'");
}

CnnPath cnnPath() {
  int v = pathSetting.load(std::memory_order_relaxed);
  if (v < 0) {
    v = static_cast<int>(pathFromEnv());
    pathSetting.store(v, std::memory_order_relaxed);
  }
  return static_cast<CnnPath>(v);
}

void setCnnPath(CnnPath path) { pathSetting.store(static_cast<int>(path)); }

static std::atomic<long> calls{0};
long oneDnnCalls() { return calls.load(); }
void noteOneDnnCall() { calls.fetch_add(1, std::memory_order_relaxed); }

/// libgomp's spin between regions, in its `pause` iterations: about 0.2 ms
/// on the Xeon the figures come from (benchmarks/results/
/// resnet_cpu_2026-11-29b.md).
static const char *const kOmpSpinCount = "3000";

static const OneDnnKernels *loadModule() {
  // Before libgomp loads (with the module): OpenMP threads that spin
  // briefly after a region and then sleep, as the runtime's pool does.
  // Sleeping at once (passive) made each of a ResNet step's ~170 oneDNN
  // calls wake its team; libgomp's default spins for milliseconds.
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT"))
    setenv("GOMP_SPINCOUNT", kOmpSpinCount, 0);
  std::string path = backends::moduleDirectory() + "/libtcc_cpu_onednn.so";
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char *why = nullptr;
  void *entry = nullptr;
  if (!h)
    why = dlerror();
  else if (!(entry = dlsym(h, "tcc_cpu_onednn_kernels")))
    why = dlerror();
  if (!entry)
    throw Error("cannot load the oneDNN kernels (" + path +
                "): " + (why ? why : "unknown error") +
                "; TCC_CPU_CONV=im2col runs without them");
  return reinterpret_cast<decltype(&tcc_cpu_onednn_kernels)>(entry)();
}

const OneDnnKernels *oneDnnKernels() {
  if (cnnPath() != CnnPath::OneDnn)
    return nullptr;
  static const OneDnnKernels *kernels = loadModule();
  return kernels;
}

const OneDnnKernels *oneDnnKernelsIfLoadable() {
  if (cnnPath() != CnnPath::OneDnn)
    return nullptr;
  static const OneDnnKernels *kernels = []() -> const OneDnnKernels * {
    try {
      return oneDnnKernels();
    } catch (const Error &) {
      return nullptr;
    }
  }();
  return kernels;
}

} // namespace tcc::rt::cpu

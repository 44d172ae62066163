//===- IsaClone.cpp - Which wrapper of a hot loop runs
//---------------------===//
#include "runtime/cpu/IsaClone.h"

#include <atomic>

namespace tcc::rt::kernels {

static bool detected() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

static std::atomic<bool> forcedOff{false};

bool avx512Cpu() {
  static const bool cpu = detected();
  return cpu && !forcedOff.load(std::memory_order_relaxed);
}

void setAvx512Loops(bool on) { forcedOff.store(!on); }

} // namespace tcc::rt::kernels

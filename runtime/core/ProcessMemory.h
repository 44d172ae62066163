//===- ProcessMemory.h - Resident memory of this process --------*- C++ -*-===//
//
// The operating system's view of the process's memory, to check the
// session's own accounting (Session::memory()) against: the resident set
// also holds code, the artifact as read, OpenBLAS's buffers and the data
// feeder, which no plan covers.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_PROCESSMEMORY_H
#define TCC_RUNTIME_CORE_PROCESSMEMORY_H

#include <cstdint>
#include <string>

namespace tcc::rt {

struct ProcessMemory {
  int64_t rssBytes = 0;     // VmRSS: resident now
  int64_t peakRssBytes = 0; // VmHWM: resident at most (since the last reset)
};

/// Reads /proc/self/status; zeros where unavailable (not Linux).
ProcessMemory readProcessMemory();

/// Resets the peak (VmHWM) to the current RSS (Linux >= 4.0, writing 5 to
/// /proc/self/clear_refs). Returns false where that is not possible; the
/// peak then covers the whole life of the process.
bool resetPeakRss();

/// The memory the kernel estimates a new allocation can get without
/// swapping (MemAvailable of /proc/meminfo), 0 where unknown.
int64_t availableMemoryBytes();

/// "512 B", "3.0 KiB", "12.5 MiB": the tools' memory figures.
std::string formatBytes(int64_t bytes);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_PROCESSMEMORY_H

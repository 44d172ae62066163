//===- ProcessMemory.cpp - Resident memory of this process ----------------===//
#include "runtime/core/ProcessMemory.h"

#include <cstdio>
#include <cstring>

namespace tcc::rt {

ProcessMemory readProcessMemory() {
  ProcessMemory m;
  std::FILE *f = std::fopen("/proc/self/status", "r");
  if (!f)
    return m;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    long long kb = 0;
    if (std::sscanf(line, "VmRSS: %lld kB", &kb) == 1)
      m.rssBytes = kb * 1024;
    else if (std::sscanf(line, "VmHWM: %lld kB", &kb) == 1)
      m.peakRssBytes = kb * 1024;
  }
  std::fclose(f);
  return m;
}

int64_t availableMemoryBytes() {
  std::FILE *f = std::fopen("/proc/meminfo", "r");
  if (!f)
    return 0;
  char line[256];
  long long kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
      break;
  std::fclose(f);
  return (int64_t)kb * 1024;
}

bool resetPeakRss() {
  std::FILE *f = std::fopen("/proc/self/clear_refs", "w");
  if (!f)
    return false;
  bool ok = std::fputs("5", f) >= 0;
  ok = std::fclose(f) == 0 && ok;
  return ok;
}

} // namespace tcc::rt

std::string tcc::rt::formatBytes(int64_t bytes) {
  char buf[64];
  if (bytes >= (1 << 20))
    std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / 1048576.0);
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof(buf), "%.1f KiB", bytes / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%lld B", (long long)bytes);
  return buf;
}

//===- AtomicFile.cpp - Files written whole or not at all -----------------===//
#include "runtime/core/AtomicFile.h"

#include "runtime/core/Artifact.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

void tcc::rt::writeFileAtomically(const std::string &path, const void *data,
                                  size_t size) {
  std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw Error(path + ": cannot write " + tmp + ": " + std::strerror(errno));
  int err = 0;
  bool ok = std::fwrite(data, 1, size, f) == size;
  ok = ok && std::fflush(f) == 0;
  // fsync before rename so a crash cannot leave a renamed but empty file.
  ok = ok && ::fsync(fileno(f)) == 0;
  if (!ok)
    err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot write " + tmp + ": " + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename " + tmp +
                " to it: " + std::strerror(err));
  }
}

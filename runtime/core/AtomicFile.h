//===- AtomicFile.h - Files written whole or not at all ---------*- C++ -*-===//
//
// Every file tcc writes for a user (artifacts, predictions, adapters) goes
// to `path + ".tmp"`, is flushed and fsync'ed, then renamed over `path`: a
// crash or a full disk never leaves a half-written file, and an existing
// one stays as it was.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ATOMICFILE_H
#define TCC_RUNTIME_CORE_ATOMICFILE_H

#include <cstddef>
#include <string>

namespace tcc::rt {

/// Writes `size` bytes at `data` to `path` as the header says. Throws Error
/// "PATH: cannot write PATH.tmp: REASON" or "PATH: cannot rename PATH.tmp
/// to it: REASON"; the temporary is removed either way.
void writeFileAtomically(const std::string &path, const void *data,
                         size_t size);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_ATOMICFILE_H

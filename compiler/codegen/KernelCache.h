//===- KernelCache.h - Compiled kernels kept across compiles ----*- C++ -*-===//
//
// NVRTC takes most of a `tcc compile --target cuda`; recompiling a model
// whose kernels did not change (another learning rate, schedule or step
// count) should not pay it again. Compiled code is kept under a key that
// hashes everything the bytes depend on (the compiler's version, the
// target, the options and the source), in one file per key:
//
//   $TCC_CACHE_DIR, else $XDG_CACHE_HOME/tcc, else $HOME/.cache/tcc,
//   then KIND/KEY (KIND "nvrtc")
//
// TCC_CACHE_DIR=off turns the cache off. An entry records its length and
// hash and is read only when both match, so a truncated or altered file is
// a miss, never wrong code. Entries are written to a unique temporary file
// and renamed, so concurrent compiles never see half an entry. A cache
// that cannot be read or written is a miss, never an error.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_CODEGEN_KERNELCACHE_H
#define TCC_COMPILER_CODEGEN_KERNELCACHE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tcc {

/// The cache's directory as the environment says; "" when it is off or no
/// directory can be named.
std::string kernelCacheDir();

/// A key for `parts`: the SHA-256 of their lengths and bytes, in hex.
std::string kernelCacheKey(const std::vector<std::string> &parts);

/// The bytes stored under `kind`/`key`, when present and intact.
std::optional<std::vector<uint8_t>> kernelCacheGet(const std::string &kind,
                                                   const std::string &key);

/// Stores `bytes` under `kind`/`key`; false (and nothing left behind) when
/// the cache is off or cannot be written.
bool kernelCachePut(const std::string &kind, const std::string &key,
                    const std::vector<uint8_t> &bytes);

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_KERNELCACHE_H

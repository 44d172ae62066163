//===- Npy.h - NumPy .npy reader ------------------------------------------===//
#ifndef TCC_RUNTIME_FEEDER_NPY_H
#define TCC_RUNTIME_FEEDER_NPY_H

#include "runtime/feeder/HostArray.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

/// Reads a .npy file (format versions 1, 2 and 3) holding a little-endian
/// C-order '<f4', '<f8', '<i8', '<i4' or '|u1' array. Rejects Fortran order,
/// other dtypes, malformed headers, truncated data and NaN/Inf values with an
/// Error naming the file.
HostArray loadNpy(const std::string &path);
/// Same, from memory; `what` names the source in errors.
HostArray parseNpy(const uint8_t *data, size_t size, const std::string &what);

/// The bytes of a version 1.0 .npy file: a C-order array of `shape` whose
/// elements are NumPy type `descr` ('<f4', '<i8', ...), `data` holding
/// exactly the product of `shape` elements of that type.
std::vector<uint8_t> encodeNpy(const std::string &descr,
                              const std::vector<int64_t> &shape,
                              const void *data, size_t bytes);
/// Writes encodeNpy(...) to `path` atomically: to `path + ".tmp"`, fsync,
/// then rename, so a failure never leaves a partial file at `path`. Error
/// naming the file and the system's reason.
void writeNpy(const std::string &path, const std::string &descr,
              const std::vector<int64_t> &shape, const void *data,
              size_t bytes);

} // namespace tcc::rt

#endif // TCC_RUNTIME_FEEDER_NPY_H

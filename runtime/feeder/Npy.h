//===- Npy.h - NumPy .npy reader ------------------------------------------===//
#ifndef TCC_RUNTIME_FEEDER_NPY_H
#define TCC_RUNTIME_FEEDER_NPY_H

#include "runtime/feeder/HostArray.h"

namespace tcc::rt {

/// Reads a .npy file (format versions 1, 2 and 3) holding a little-endian
/// C-order '<f4', '<f8', '<i8', '<i4' or '|u1' array. Rejects Fortran order,
/// other dtypes, malformed headers, truncated data and NaN/Inf values with an
/// Error naming the file.
HostArray loadNpy(const std::string &path);
/// Same, from memory; `what` names the source in errors.
HostArray parseNpy(const uint8_t *data, size_t size, const std::string &what);

} // namespace tcc::rt

#endif // TCC_RUNTIME_FEEDER_NPY_H

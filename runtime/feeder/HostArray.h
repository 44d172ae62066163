//===- HostArray.h - An array loaded from a data file ---------------------===//
#ifndef TCC_RUNTIME_FEEDER_HOSTARRAY_H
#define TCC_RUNTIME_FEEDER_HOSTARRAY_H

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

/// Element types a data file may hold (wider than the artifact's DType:
/// data sets come as f64 CSVs, u8 images, i32 labels, ...).
enum class FileDType : uint8_t { F32, F64, I64, I32, U8 };
const char *fileDTypeName(FileDType t); // "f32", "f64", "i64", "i32", "u8"
size_t fileDTypeSize(FileDType t);

/// A dense C-order array as read from disk; dim 0 indexes samples.
struct HostArray {
  FileDType dtype = FileDType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  /// The file it came from, for error messages (may be empty).
  std::string path;

  int64_t numElements() const;
  /// Element i as a double (exact for every FileDType but large i64).
  double at(int64_t i) const;
};

/// Loads a .npy or .csv file, chosen by extension. Throws Error.
HostArray loadArray(const std::string &path);

/// Throws Error naming the file and the sample (index along dim 0) of the
/// first NaN or Inf in a floating-point array.
void checkFinite(const HostArray &a);

} // namespace tcc::rt

#endif // TCC_RUNTIME_FEEDER_HOSTARRAY_H

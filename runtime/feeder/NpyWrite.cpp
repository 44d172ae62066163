//===- NpyWrite.cpp - NumPy .npy writer -----------------------------------===//
//
// Version 1.0 files: the magic, a little-endian u16 header length and a
// Python dict literal padded with spaces to a multiple of 64 bytes (NumPy's
// own alignment), then the raw C-order data. What `tcc predict` writes.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Artifact.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/feeder/Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace tcc::rt {

std::vector<uint8_t> encodeNpy(const std::string &descr,
                               const std::vector<int64_t> &shape,
                               const void *data, size_t bytes) {
  std::string dims;
  int64_t n = 1;
  for (int64_t d : shape) {
    dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    n *= d;
  }
  if (shape.size() == 1)
    dims += ","; // a Python 1-tuple
  size_t elem =
      descr.size() >= 3 ? std::strtoul(descr.c_str() + 2, nullptr, 10) : 0;
  if (elem == 0 || static_cast<size_t>(n) * elem != bytes)
    throw Error("npy: " + std::to_string(bytes) + " bytes do not hold a " +
                descr + " array of shape " + formatShape(shape));
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header + '\n', to a multiple of 64.
  size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  if (header.size() > 0xffff)
    throw Error("npy: the header of shape " + formatShape(shape) +
                " is too long for format 1.0");
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(static_cast<uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  const uint8_t *p = static_cast<const uint8_t *>(data);
  out.insert(out.end(), p, p + bytes);
  return out;
}

void writeNpy(const std::string &path, const std::string &descr,
              const std::vector<int64_t> &shape, const void *data,
              size_t bytes) {
  std::vector<uint8_t> file = encodeNpy(descr, shape, data, bytes);
  writeFileAtomically(path, file.data(), file.size());
}

} // namespace tcc::rt

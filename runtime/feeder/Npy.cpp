//===- Npy.cpp - NumPy .npy reader ----------------------------------------===//
//
// The header is a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// parsed here with a small tokenizer instead of trusting its layout.
//
//===----------------------------------------------------------------------===//
#include "runtime/feeder/Npy.h"
#include "runtime/core/Artifact.h"
#include "runtime/feeder/HostArray.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace tcc::rt {

namespace {
struct NpyHeader {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
};

/// A cursor over the header text; every method throws on malformed input.
class HeaderParser {
public:
  HeaderParser(const std::string &text, const std::string &what)
      : s_(text), what_(what) {}

  NpyHeader parse() {
    NpyHeader h;
    bool haveDescr = false, haveFortran = false, haveShape = false;
    expect('{');
    while (!peekIs('}')) {
      std::string key = quoted();
      expect(':');
      if (key == "descr") {
        h.descr = quoted();
        haveDescr = true;
      } else if (key == "fortran_order") {
        h.fortran = boolean();
        haveFortran = true;
      } else if (key == "shape") {
        h.shape = tuple();
        haveShape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      if (!peekIs('}'))
        expect(',');
    }
    expect('}');
    if (!haveDescr || !haveFortran || !haveShape)
      fail("missing 'descr', 'fortran_order' or 'shape'");
    return h;
  }

private:
  [[noreturn]] void fail(const std::string &msg) const {
    throw Error(what_ + ": bad .npy header: " + msg);
  }
  void skipSpace() {
    while (pos_ < s_.size() &&
           std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  bool peekIs(char c) {
    skipSpace();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peekIs(c))
      fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string quoted() {
    skipSpace();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      fail("expected a quoted string");
    char q = s_[pos_++];
    size_t end = s_.find(q, pos_);
    if (end == std::string::npos)
      fail("unterminated string");
    std::string out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skipSpace();
    for (const char *word : {"True", "False"})
      if (s_.compare(pos_, std::strlen(word), word) == 0) {
        pos_ += std::strlen(word);
        return word[0] == 'T';
      }
    fail("expected True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (!peekIs(')')) {
      skipSpace();
      size_t start = pos_;
      int64_t v = 0;
      while (pos_ < s_.size() &&
             std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (v > (INT64_MAX - 9) / 10)
          fail("dimension too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (pos_ == start)
        fail("expected a non-negative integer dimension");
      dims.push_back(v);
      if (!peekIs(')'))
        expect(',');
    }
    expect(')');
    return dims;
  }

  const std::string &s_;
  const std::string &what_;
  size_t pos_ = 0;
};
} // namespace

static FileDType parseDescr(const std::string &d, const std::string &what) {
  if (d == "<f4")
    return FileDType::F32;
  if (d == "<f8")
    return FileDType::F64;
  if (d == "<i8")
    return FileDType::I64;
  if (d == "<i4")
    return FileDType::I32;
  if (d == "|u1" || d == "u1")
    return FileDType::U8;
  throw Error(what + ": unsupported dtype '" + d +
              "' (supported: <f4, <f8, <i8, <i4, |u1)");
}

HostArray parseNpy(const uint8_t *data, size_t size, const std::string &what) {
  static const uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(data, kMagic, 6) != 0)
    throw Error(what + ": not a .npy file (bad magic)");
  uint8_t major = data[6];
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = data[8] | (size_t(data[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12)
      throw Error(what + ": truncated .npy header");
    headerLen = data[8] | (size_t(data[9]) << 8) | (size_t(data[10]) << 16) |
                (size_t(data[11]) << 24);
    headerStart = 12;
  } else {
    throw Error(what + ": unsupported .npy format version " +
                std::to_string(major));
  }
  if (headerLen > size - headerStart)
    throw Error(what + ": truncated .npy header");
  std::string text(reinterpret_cast<const char *>(data + headerStart),
                   headerLen);
  NpyHeader h = HeaderParser(text, what).parse();
  if (h.fortran)
    throw Error(what + ": Fortran-order arrays are not supported; save with "
                       "numpy.ascontiguousarray");

  HostArray a;
  a.path = what;
  a.dtype = parseDescr(h.descr, what);
  a.shape = h.shape;
  size_t avail = size - headerStart - headerLen;
  uint64_t bytes = fileDTypeSize(a.dtype);
  bool empty = false;
  for (int64_t d : a.shape)
    empty = empty || d == 0;
  for (int64_t d : a.shape) {
    if (empty)
      bytes = 0;
    else if (bytes > (uint64_t(1) << 62) / static_cast<uint64_t>(d))
      throw Error(what + ": shape " + formatShape(a.shape) + " is too large");
    else
      bytes *= static_cast<uint64_t>(d);
  }
  if (bytes > avail)
    throw Error(what + ": truncated data: expected " + std::to_string(bytes) +
                " bytes for shape " + formatShape(a.shape) + ", found " +
                std::to_string(avail));
  if (bytes < avail)
    throw Error(what + ": " + std::to_string(avail - bytes) +
                " unexpected bytes after the data");
  const uint8_t *body = data + headerStart + headerLen;
  a.bytes.assign(body, body + bytes);
  checkFinite(a);
  return a;
}

HostArray loadNpy(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw Error(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                             std::istreambuf_iterator<char>());
  if (f.bad())
    throw Error(path + ": read error");
  return parseNpy(bytes.data(), bytes.size(), path);
}

} // namespace tcc::rt

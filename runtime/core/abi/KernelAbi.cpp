//===- KernelAbi.cpp - The kernel table and attribute count checks ------===//
#include "runtime/core/abi/KernelAbi.h"

#include <algorithm>
#include <cstring>

namespace tcc::rt::abi {

const KernelInfo kKernels[kKernelCount] = {
#define TCC_KERNEL(Id, name, Attrs, inPlace)                                   \
  {KernelId::Id, name, inPlace, &checkAttrs<Attrs>},
#include "runtime/core/abi/KernelList.def"
};

// Sorted by name, so kernelByName can binary-search: checked at build time.
static constexpr const char *kNames[] = {
#define TCC_KERNEL(Id, name, Attrs, inPlace) name,
#include "runtime/core/abi/KernelList.def"
};

static constexpr bool sortedByName() {
  for (size_t i = 1; i < kKernelCount; ++i) {
    const char *a = kNames[i - 1], *b = kNames[i];
    while (*a && *a == *b)
      ++a, ++b;
    if (static_cast<unsigned char>(*a) >= static_cast<unsigned char>(*b))
      return false;
  }
  return true;
}
static_assert(sortedByName(), "KernelList.def must be sorted by name");

std::optional<KernelId> kernelByName(const std::string &name) {
  const KernelInfo *end = kKernels + kKernelCount;
  const KernelInfo *it = std::lower_bound(
      kKernels, end, name, [](const KernelInfo &k, const std::string &n) {
        return std::strcmp(k.name, n.c_str()) < 0;
      });
  if (it == end || name != it->name)
    return std::nullopt;
  return it->id;
}

namespace detail {

static std::string plural(size_t n, const char *what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string attrCountError(const Instr &in, const AttrShape &s) {
  size_t n = in.iattrs.size();
  bool intsFit = s.tail == 1   ? n >= s.integers
                 : s.tail == 2 ? n >= s.integers && (n - s.integers) % 2 == 0
                 : s.optional  ? n == s.integers || n == s.integers + 1
                               : n == s.integers;
  if (!intsFit) {
    // "1 integer attribute", "at least 1 integer attribute", else plural.
    bool one = s.integers == 1 && (s.tail == 1 || (!s.tail && !s.optional));
    std::string want =
        s.tail == 1   ? "at least " + std::to_string(s.integers)
        : s.tail == 2 ? (s.integers ? std::to_string(s.integers) + " plus " : "") +
                            std::string("an even number of")
        : s.optional  ? std::to_string(s.integers) + " or " +
                           std::to_string(s.integers + 1)
                      : std::to_string(s.integers);
    return "expects " + want + " integer attribute" + (one ? "" : "s") +
           (s.integerNames.empty() ? "" : " (" + s.integerNames + ")") +
           ", got " + std::to_string(n);
  }
  if (in.fattrs.size() != s.reals)
    return "expects " + plural(s.reals, "float attribute") +
           (s.realNames.empty() ? "" : " (" + s.realNames + ")") + ", got " +
           std::to_string(in.fattrs.size());
  for (size_t k = 0; k < s.flags.size(); ++k) {
    int64_t v = in.iattrs[s.flagAt[k]];
    if (v != 0 && v != 1)
      return std::string("attribute '") + s.flags[k] + "' must be 0 or 1, got " +
             std::to_string(v);
  }
  if (s.optional && n == s.integers + 1 && in.iattrs[n - 1] != 0 &&
      in.iattrs[n - 1] != 1)
    return std::string("attribute '") + s.optionalName +
           "' must be 0 or 1, got " + std::to_string(in.iattrs[n - 1]);
  return "";
}

} // namespace detail

} // namespace tcc::rt::abi

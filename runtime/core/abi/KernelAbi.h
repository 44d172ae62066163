//===- KernelAbi.h - Kernel ids, names and build-time table checks -*- C++ -*-===//
//
// KernelList.def as C++: an enumerator per kernel (abi::KernelId), its one
// spelling, its attribute view and whether it is element-wise, plus the
// check a backend's dispatch table passes at build time (coversInOrder: one
// entry per kernel, in the list's order). The compiler writes kernel names
// through name(KernelId) and attributes through setAttrs, so the artifact's
// spelling lives in KernelList.def alone.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_ABI_KERNELABI_H
#define TCC_RUNTIME_CORE_ABI_KERNELABI_H

#include "runtime/core/Artifact.h"
#include "runtime/core/abi/KernelAttrs.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tcc::rt::abi {

enum class KernelId : uint16_t {
#define TCC_KERNEL(Id, name, Attrs, inPlace) Id,
#include "runtime/core/abi/KernelList.def"
};

inline constexpr size_t kKernelCount = 0
#define TCC_KERNEL(Id, name, Attrs, inPlace) +1
#include "runtime/core/abi/KernelList.def"
    ;

struct KernelInfo {
  KernelId id;
  const char *name;
  /// Element-wise: an output may be the same bytes as an input of its
  /// element count (in-place updates).
  bool inPlace;
  /// checkAttrs<the kernel's Attrs>.
  void (*checkAttrs)(const Instr &);
};

/// Every kernel, in KernelList.def's order (sorted by name).
extern const KernelInfo kKernels[kKernelCount];

inline const KernelInfo &info(KernelId id) {
  return kKernels[static_cast<size_t>(id)];
}
inline const char *name(KernelId id) { return info(id).name; }
/// The kernel spelled `name`, if any.
std::optional<KernelId> kernelByName(const std::string &name);
/// Whether `in` calls kernel `id`.
inline bool is(const Instr &in, KernelId id) { return in.kernel == name(id); }

/// The attribute view of kernel Id: AttrsOf<KernelId::Matmul>::type is
/// MatmulAttrs.
template <KernelId Id> struct AttrsOf;
#define TCC_KERNEL(Id, name, Attrs, inPlace)                                   \
  template <> struct AttrsOf<KernelId::Id> {                                   \
    using type = Attrs;                                                        \
  };
#include "runtime/core/abi/KernelList.def"

/// The attributes of checked instr `in`, which calls kernel Id.
template <KernelId Id> typename AttrsOf<Id>::type attrs(const Instr &in) {
  return attrsOf<typename AttrsOf<Id>::type>(in);
}

/// Whether a backend's dispatch table (entries with a KernelId `id`) has one
/// entry per kernel in KernelList.def's order: a backend states for every
/// kernel how it runs it or that it does not.
template <class Entry, size_t N>
constexpr bool coversInOrder(const Entry (&table)[N]) {
  if (N != kKernelCount)
    return false;
  for (size_t i = 0; i < N; ++i)
    if (static_cast<size_t>(table[i].id) != i)
      return false;
  return true;
}

} // namespace tcc::rt::abi

#endif // TCC_RUNTIME_CORE_ABI_KERNELABI_H

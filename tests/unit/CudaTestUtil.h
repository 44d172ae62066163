//===- CudaTestUtil.h - CUDA helpers of the kernel tests ------------------===//
//
// What only the CUDA tests need beside the conformance cases
// (KernelCases.h, which need no CUDA): a skip without a GPU, the scopes that
// set the tiled attention's choices a case asks for, and a GPT-2-sized
// attention launch to ask the launchers' choices about.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_CUDATESTUTIL_H
#define TCC_TESTS_UNIT_CUDATESTUTIL_H

#include "KernelCases.h"

#include "runtime/cuda/CudaAttention.h"
#include "runtime/cuda/CudaSession.h"

#include <gtest/gtest.h>

#include <string>

namespace tcc::rt::test {

/// Skips the test on a machine without a usable GPU.
#define TCC_REQUIRE_GPU()                                                      \
  do {                                                                         \
    std::string why_;                                                          \
    if (!::tcc::rt::cuda::deviceAvailable(&why_))                              \
      GTEST_SKIP() << "needs a GPU: " << why_;                                 \
  } while (0)

/// A test's choice for one of the tiled attention's settings while in
/// scope (`Set(value)`, then `Set(Unset)`: as the environment says again):
/// a case's setting, not the next one's.
template <class T, void (*Set)(T), T Unset> struct SettingScope {
  explicit SettingScope(T value) { Set(value); }
  ~SettingScope() { Set(Unset); }
  SettingScope(const SettingScope &) = delete;
  SettingScope &operator=(const SettingScope &) = delete;
};

/// Warps of `rows` rows (0: as the environment says).
using AttentionWarpRowsScope =
    SettingScope<int, cuda::setTiledAttentionWarpRows, 0>;
/// How the kernels copy their tiles.
using AttentionCopiesScope =
    SettingScope<cuda::TileCopies, cuda::setTiledAttentionCopies,
                 cuda::TileCopies::Environment>;

/// How the kernels multiply their tiles.
using AttentionProductsScope =
    SettingScope<cuda::TileProducts, cuda::setTiledAttentionProducts,
                 cuda::TileProducts::Environment>;

inline cuda::TileCopies cudaTileCopies(AttentionCopies c) {
  switch (c) {
  case AttentionCopies::Async:
    return cuda::TileCopies::Async;
  case AttentionCopies::Tma:
    return cuda::TileCopies::Tma;
  case AttentionCopies::Environment:
    break;
  }
  return cuda::TileCopies::Environment;
}

inline cuda::TileProducts cudaTileProducts(AttentionProducts p) {
  switch (p) {
  case AttentionProducts::Sync:
    return cuda::TileProducts::Sync;
  case AttentionProducts::Wgmma:
    return cuda::TileProducts::Wgmma;
  case AttentionProducts::Environment:
    break;
  }
  return cuda::TileProducts::Environment;
}

/// All of a case's CUDA settings, while it runs.
struct CaseScope {
  explicit CaseScope(const KernelCase &c)
      : rows(c.attentionWarpRows), copies(cudaTileCopies(c.attentionCopies)),
        products(cudaTileProducts(c.attentionProducts)) {}
  AttentionWarpRowsScope rows;
  AttentionCopiesScope copies;
  AttentionProductsScope products;
};

/// A tiled attention launch of GPT-2 small's shape (12 heads of 64, T 1024,
/// q, k and v the thirds of one projection) over `batch` entries, its
/// operands 16-byte aligned (a static buffer; nothing is read): what the
/// launchers' choices of copies and products are asked about.
inline cuda::AttentionTiles gpt2AttentionTiles(long long batch = 24) {
  alignas(16) static unsigned short buf[64];
  cuda::AttentionTiles t;
  t.q = buf;
  t.k = buf + 8;
  t.v = buf + 16;
  t.dout = buf + 24;
  t.d = 64;
  t.heads = 12;
  t.batch = batch;
  t.tq = t.tk = 1024;
  t.inputPitch = 3 * 12 * 64;
  return t;
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_CUDATESTUTIL_H

//===- KernelTestUtil.h - A small harness to call kernels from tests ------===//
#ifndef TCC_TESTS_UNIT_KERNELTESTUTIL_H
#define TCC_TESTS_UNIT_KERNELTESTUTIL_H

#include "runtime/cpu/Kernels.h"

#include <cstring>
#include <random>
#include <vector>

namespace tcc::rt::test {

/// Owns tensors (infos + storage) and runs single instrs over them.
class KernelHarness {
public:
  int32_t f32(std::vector<int64_t> shape, const std::vector<float> &values) {
    int32_t id = add(std::move(shape), DType::F32);
    if (store_[id].size())
      std::memcpy(store_[id].data(), values.data(), store_[id].size());
    return id;
  }
  int32_t i64(std::vector<int64_t> shape, const std::vector<int64_t> &values) {
    int32_t id = add(std::move(shape), DType::I64);
    if (store_[id].size())
      std::memcpy(store_[id].data(), values.data(), store_[id].size());
    return id;
  }
  /// An output, pre-filled with garbage so kernels must overwrite it.
  int32_t out(std::vector<int64_t> shape, DType dtype = DType::F32) {
    int32_t id = add(std::move(shape), dtype);
    std::memset(store_[id].data(), 0x7f, store_[id].size());
    return id;
  }
  void run(const std::string &kernel, std::vector<int32_t> in,
           std::vector<int32_t> outs, std::vector<int64_t> iattrs = {},
           std::vector<double> fattrs = {}) {
    Instr instr{kernel, std::move(in), std::move(outs), std::move(iattrs),
                std::move(fattrs)};
    std::vector<void *> buffers;
    for (auto &s : store_)
      buffers.push_back(s.data());
    runKernel(instr, infos_, buffers);
  }
  void check(const std::string &kernel, std::vector<int32_t> in,
             std::vector<int32_t> outs, std::vector<int64_t> iattrs = {},
             std::vector<double> fattrs = {}) {
    checkInstr(Instr{kernel, std::move(in), std::move(outs), std::move(iattrs),
                     std::move(fattrs)},
               infos_);
  }
  std::vector<float> get(int32_t id) const {
    std::vector<float> v(infos_[id].numElements());
    if (!v.empty()) // an empty tensor's buffer may be null (UB for memcpy)
      std::memcpy(v.data(), store_[id].data(), v.size() * sizeof(float));
    return v;
  }
  std::vector<int64_t> getI64(int32_t id) const {
    std::vector<int64_t> v(infos_[id].numElements());
    if (!v.empty()) // an empty tensor's buffer may be null (UB for memcpy)
      std::memcpy(v.data(), store_[id].data(), v.size() * sizeof(int64_t));
    return v;
  }
  const TensorInfo &info(int32_t id) const { return infos_[id]; }

private:
  int32_t add(std::vector<int64_t> shape, DType dtype) {
    TensorInfo t;
    t.name = "t" + std::to_string(infos_.size());
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.kind = TensorKind::Input;
    // Storage as int64 keeps every buffer 8-byte aligned.
    store_.emplace_back();
    store_.back().resize(static_cast<size_t>(t.byteSize()));
    infos_.push_back(std::move(t));
    return static_cast<int32_t>(infos_.size() - 1);
  }

  struct Storage {
    std::vector<int64_t> words;
    size_t bytes = 0;
    void resize(size_t n) {
      bytes = n;
      words.assign(n / 8 + 1, 0);
    }
    void *data() { return words.data(); }
    const void *data() const { return words.data(); }
    size_t size() const { return bytes; }
  };
  std::vector<TensorInfo> infos_;
  std::vector<Storage> store_;
};

inline int64_t numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

inline std::vector<float> randomValues(int64_t n, uint32_t seed,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// Multi-index of flat index `i` in `shape` (row-major).
inline std::vector<int64_t> unravel(int64_t i,
                                    const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

/// Flat index into `shape` of the output multi-index `idx` (of rank >=
/// shape's), numpy broadcasting: right-aligned, size-1 dims read index 0.
inline int64_t broadcastIndex(const std::vector<int64_t> &idx,
                              const std::vector<int64_t> &shape) {
  int64_t flat = 0;
  size_t shift = idx.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + (shape[d] == 1 ? 0 : idx[d + shift]);
  return flat;
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_KERNELTESTUTIL_H

//===- KernelTestUtil.h - A small harness to call kernels from tests ------===//
#ifndef TCC_TESTS_UNIT_KERNELTESTUTIL_H
#define TCC_TESTS_UNIT_KERNELTESTUTIL_H

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
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
  /// The raw words of a bf16/f16 tensor.
  std::vector<uint16_t> getU16(int32_t id) const {
    std::vector<uint16_t> v(infos_[id].numElements());
    if (!v.empty())
      std::memcpy(v.data(), store_[id].data(), v.size() * sizeof(uint16_t));
    return v;
  }
  std::vector<int64_t> getI64(int32_t id) const {
    std::vector<int64_t> v(infos_[id].numElements());
    if (!v.empty()) // an empty tensor's buffer may be null (UB for memcpy)
      std::memcpy(v.data(), store_[id].data(), v.size() * sizeof(int64_t));
    return v;
  }
  /// Overwrites an f32 tensor's values (what a train loop does to state
  /// between runs).
  void setF32(int32_t id, const std::vector<float> &values) {
    std::memcpy(store_[id].data(), values.data(),
                std::min(store_[id].size(), values.size() * sizeof(float)));
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

/// `x` of shape [o, a, b, c] with its middle axes swapped: [o, b, a, c]
/// (attention's sequence-major [B, T, H, D] <-> packed [B, H, T, D]).
template <class T>
std::vector<T> swapMiddleAxes(const std::vector<T> &x, int64_t o, int64_t a,
                              int64_t b, int64_t c) {
  std::vector<T> y(x.size());
  for (int64_t i = 0; i < o; ++i)
    for (int64_t j = 0; j < a; ++j)
      for (int64_t k = 0; k < b; ++k)
        std::copy_n(x.begin() + ((i * a + j) * b + k) * c, c,
                    y.begin() + ((i * b + k) * a + j) * c);
  return y;
}

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

/// Tensors of any dtype, given and read as f32 values (16-bit ones rounded
/// on the way in, widened on the way out), for the kernels that take
/// f32, bf16 and f16 alike. Buffers are int64 words (8-byte aligned) with at
/// least 8 bytes of slack, pre-filled with 0x7f bytes so kernels must write.
struct DTypeTensors {
  std::vector<TensorInfo> infos;
  std::vector<std::vector<int64_t>> store;

  int32_t add(DType t, std::vector<int64_t> shape,
              const std::vector<float> &values = {}) {
    TensorInfo info;
    info.name = "t" + std::to_string(infos.size());
    info.dtype = t;
    info.shape = std::move(shape);
    info.kind = TensorKind::Input;
    store.emplace_back((info.byteSize() + 7) / 8 + 1, 0x7f7f7f7f7f7f7f7fll);
    if (!values.empty())
      narrowFromF32(values.data(), t, store.back().data(), info.numElements());
    infos.push_back(std::move(info));
    return static_cast<int32_t>(infos.size() - 1);
  }
  /// The same values as tensor `id` in dtype `t` (rounded).
  int32_t as(DType t, int32_t id) { return add(t, infos[id].shape, get(id)); }
  std::vector<float> get(int32_t id) const {
    std::vector<float> v(infos[id].numElements());
    widenToF32(store[id].data(), infos[id].dtype, v.data(), v.size());
    return v;
  }
  std::vector<void *> buffers() {
    std::vector<void *> b;
    for (auto &s : store)
      b.push_back(s.data());
    return b;
  }
  void run(const Instr &in) { runKernel(in, infos, buffers()); }
  void run(const std::string &kernel, std::vector<int32_t> in,
           std::vector<int32_t> out, std::vector<int64_t> iattrs = {},
           std::vector<double> fattrs = {}) {
    run(Instr{kernel, std::move(in), std::move(out), std::move(iattrs),
              std::move(fattrs)});
  }
};

/// Normally distributed values (mean 0, standard deviation `scale`).
inline std::vector<float> normalValues(size_t n, unsigned seed,
                                       float scale = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

/// The values a tensor of dtype `t` holds for `v` (as a 16-bit kernel's
/// output is rounded).
inline std::vector<float> roundedTo(std::vector<float> v, DType t) {
  if (t == DType::F32)
    return v;
  std::vector<uint16_t> h(v.size());
  narrowFromF32(v.data(), t, h.data(), v.size());
  widenToF32(h.data(), t, v.data(), v.size());
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

//===- OneProgram.h - Small artifacts of a few instrs, for kernel tests ---===//
//
// A test builds an artifact whose operands are state tensors with random
// initial data, then runs its programs on the CPU kernels directly
// (runCpu: runKernel on host copies, the reference) and through a backend's
// Session (runOn: the registry, upload, run, synchronize, download), and
// compares the tensors. Nothing here needs CUDA: the conformance suite
// (ConformanceTest.cpp) builds it in every configuration; CudaTestUtil.h
// adds the CUDA-only helpers.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_ONEPROGRAM_H
#define TCC_TESTS_UNIT_ONEPROGRAM_H

#include "runtime/core/Artifact.h"
#include "runtime/core/Backend.h"
#include "runtime/core/prelude/Half.h"
#include "runtime/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace tcc::rt::test {

/// Builds an artifact with one program "p" (or more with program()).
class OneProgram {
public:
  OneProgram() { program("p"); }

  /// Starts another program; later instrs and temps belong to it.
  void program(const std::string &name) {
    Program p;
    p.name = name;
    art_.programs.push_back(p);
  }

  /// A state tensor holding `bytes` (its initial value).
  int32_t tensor(DType t, std::vector<int64_t> shape,
                 const std::vector<uint8_t> &bytes,
                 TensorKind kind = TensorKind::State) {
    TensorInfo info;
    info.name = "t" + std::to_string(art_.tensors.size());
    info.dtype = t;
    info.shape = std::move(shape);
    info.kind = kind;
    std::vector<uint8_t> data = bytes;
    data.resize(static_cast<size_t>(info.byteSize()));
    if (kind != TensorKind::Input)
      info.dataOffset = art_.addBlob(data.data(), data.size());
    art_.tensors.push_back(info);
    return static_cast<int32_t>(art_.tensors.size() - 1);
  }

  /// Random values in [lo, hi), stored as `t` (f32, bf16 or f16).
  int32_t random(DType t, std::vector<int64_t> shape, float lo = -2,
                 float hi = 2) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float &x : v)
      x = dist(rng_);
    return floats(t, std::move(shape), v);
  }

  int32_t floats(DType t, std::vector<int64_t> shape,
                 const std::vector<float> &v) {
    std::vector<uint8_t> bytes(v.size() * dtypeSize(t));
    narrowFromF32(v.data(), t, bytes.data(), static_cast<int64_t>(v.size()));
    return tensor(t, std::move(shape), bytes);
  }

  int32_t i64(std::vector<int64_t> shape, const std::vector<int64_t> &v) {
    std::vector<uint8_t> bytes(v.size() * 8);
    if (!v.empty())
      std::memcpy(bytes.data(), v.data(), bytes.size());
    return tensor(DType::I64, std::move(shape), bytes);
  }

  /// An output, initially filled with 0x7f bytes (kernels must write it).
  int32_t out(DType t, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return tensor(t, std::move(shape),
                  std::vector<uint8_t>(n * dtypeSize(t), 0x7f));
  }

  /// A temporary of the current program at the next free arena offset.
  int32_t temp(DType t, std::vector<int64_t> shape) {
    TensorInfo info;
    info.name = "t" + std::to_string(art_.tensors.size());
    info.dtype = t;
    info.shape = std::move(shape);
    info.kind = TensorKind::Temp;
    info.program = art_.programs.back().name;
    Program &p = art_.programs.back();
    info.arenaOffset = (p.arenaBytes + 255) / 256 * 256;
    p.arenaBytes = info.arenaOffset + info.byteSize();
    art_.tensors.push_back(info);
    return static_cast<int32_t>(art_.tensors.size() - 1);
  }

  void instr(const std::string &kernel, std::vector<int32_t> in,
             std::vector<int32_t> outs, std::vector<int64_t> iattrs = {},
             std::vector<double> fattrs = {}) {
    Program &p = art_.programs.back();
    for (int32_t id : outs)
      p.outputs.push_back(id);
    p.instrs.push_back(Instr{kernel, std::move(in), std::move(outs),
                             std::move(iattrs), std::move(fattrs)});
  }

  /// Makes `id` (a temporary) no output of the current program: an eager
  /// session frees it after its last use, as it does a training step's
  /// intermediates, and it cannot be downloaded after the run.
  void internal(int32_t id) {
    std::vector<int32_t> &o = art_.programs.back().outputs;
    o.erase(std::remove(o.begin(), o.end(), id), o.end());
  }

  Artifact &artifact() { return art_; }
  const Artifact &artifact() const { return art_; }
  const TensorInfo &info(int32_t id) const { return art_.tensors[id]; }

  /// Every tensor's bytes after running the programs on the CPU kernels.
  std::vector<std::vector<uint8_t>> runCpu() const {
    std::vector<std::vector<uint8_t>> store = initial();
    std::vector<void *> buffers;
    for (auto &s : store)
      buffers.push_back(s.data());
    for (const Program &p : art_.programs)
      for (const Instr &in : p.instrs)
        runKernel(in, art_.tensors, buffers);
    return store;
  }

  /// Every non-temporary tensor's bytes (temporaries: empty) after running
  /// the programs `runs` times through a session of backend `backend`
  /// (openSession): the tensors the instrs read are uploaded first (their
  /// initial bytes, as a loop feeds a batch), then each program runs, the
  /// session synchronizes and every tensor is downloaded.
  std::vector<std::vector<uint8_t>> runOn(const std::string &backend,
                                          ExecMode mode,
                                          const SessionOptions &opts = {},
                                          int runs = 1) const {
    std::unique_ptr<Session> s = openSession(backend, art_, mode, opts);
    std::vector<std::vector<uint8_t>> init = initial();
    std::vector<bool> read(art_.tensors.size(), false);
    for (const Program &p : art_.programs)
      for (const Instr &in : p.instrs)
        for (int32_t id : in.inputs)
          read[id] = art_.tensors[id].kind != TensorKind::Temp;
    for (size_t id = 0; id < read.size(); ++id)
      if (read[id])
        s->upload(static_cast<int32_t>(id), init[id].data());
    for (int r = 0; r < runs; ++r)
      for (const Program &p : art_.programs)
        s->run(p.name);
    s->synchronize();
    std::vector<std::vector<uint8_t>> store(art_.tensors.size());
    for (size_t id = 0; id < art_.tensors.size(); ++id) {
      if (art_.tensors[id].kind == TensorKind::Temp)
        continue;
      store[id].resize(static_cast<size_t>(art_.tensors[id].byteSize()));
      s->download(static_cast<int32_t>(id), store[id].data());
    }
    return store;
  }

  /// runOn the CUDA backend (tests that need a GPU skip without one first).
  std::vector<std::vector<uint8_t>> runGpu(ExecMode mode = ExecMode::Compiled,
                                           SessionOptions opts = {},
                                           int runs = 1) const {
    return runOn("cuda", mode, opts, runs);
  }

  std::vector<std::vector<uint8_t>> initial() const {
    std::vector<std::vector<uint8_t>> store;
    for (const TensorInfo &t : art_.tensors) {
      store.emplace_back(
          static_cast<size_t>(std::max<int64_t>(t.byteSize(), 8)));
      if (t.dataOffset >= 0)
        std::memcpy(store.back().data(), art_.blob.data() + t.dataOffset,
                    t.byteSize());
    }
    return store;
  }

private:
  Artifact art_;
  std::mt19937 rng_{1234};
};

/// Tensor bytes as doubles, whatever the dtype.
inline std::vector<double> asDoubles(const TensorInfo &t,
                                     const std::vector<uint8_t> &b) {
  int64_t n = t.numElements();
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (t.dtype == DType::I64) {
      int64_t x;
      std::memcpy(&x, b.data() + 8 * i, 8);
      v[i] = static_cast<double>(x);
    } else {
      float f;
      widenToF32(b.data() + dtypeSize(t.dtype) * i, t.dtype, &f, 1);
      v[i] = f;
    }
  }
  return v;
}

/// |got - cpu| <= atol + rtol * |cpu| for every element of tensor `id`
/// (NaNs must match; at most five mismatches are reported).
inline void expectClose(const OneProgram &prog,
                        const std::vector<std::vector<uint8_t>> &cpu,
                        const std::vector<std::vector<uint8_t>> &got,
                        int32_t id, double rtol, double atol) {
  const TensorInfo &t = prog.info(id);
  std::vector<double> c = asDoubles(t, cpu[id]), g = asDoubles(t, got[id]);
  int bad = 0;
  for (size_t i = 0; i < c.size() && bad < 5; ++i) {
    bool ok = std::isnan(c[i]) ? std::isnan(g[i])
              : std::isinf(c[i])
                  ? g[i] == c[i]
                  : std::fabs(g[i] - c[i]) <= atol + rtol * std::fabs(c[i]);
    if (!ok) {
      ++bad;
      ADD_FAILURE() << "tensor " << t.name << " " << formatShape(t.shape)
                    << " element " << i << ": got " << g[i] << ", CPU " << c[i];
    }
  }
}

} // namespace tcc::rt::test

#endif // TCC_TESTS_UNIT_ONEPROGRAM_H

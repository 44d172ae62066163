//===- FusedLibrary.cpp - Loading and running generated kernels -----------===//
#include "runtime/cpu/FusedLibrary.h"

#include "runtime/core/ThreadPool.h"
#include "runtime/cpu/KernelsInternal.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace tcc::rt {

namespace {
/// Removes a file when it goes out of scope.
struct TempFile {
  std::string path;
  ~TempFile() {
    if (!path.empty())
      ::unlink(path.c_str());
  }
};
} // namespace

FusedLibrary::FusedLibrary(const uint8_t *bytes, size_t size,
                           const std::string &isa) {
  if (!cpuSupportsIsa(isa)) {
    // The baseline is recorded as "generic"; users name it x86-64.
    auto name = [](std::string i) { return i == "generic" ? "x86-64" : i; };
    std::string host = name(hostIsa()), detected = name(detectedIsa());
    throw Error("the artifact's generated kernels were compiled for " +
                name(isa) + ", which this CPU does not support (it supports " +
                host +
                (host != detected ? ", as TCC_HOST_ISA lowers its " + detected
                                  : std::string()) +
                "); recompile the model on this machine (tcc compile, or "
                "tcc compile --cpu-isa " +
                host + ")");
  }
  // dlopen needs a file: a private temporary one, unlinked once loaded.
  const char *tmpdir = std::getenv("TMPDIR");
  TempFile file;
  file.path =
      std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/tcc-kernels-XXXXXX";
  std::vector<char> name(file.path.begin(), file.path.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0) {
    file.path.clear();
    throw Error("cannot create a temporary file for the generated kernels in " +
                std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + ": " +
                std::strerror(errno));
  }
  file.path = name.data();
  size_t written = 0;
  while (written < size) {
    ssize_t n = ::write(fd, bytes + written, size - written);
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      throw Error("cannot write the generated kernels to " + file.path + ": " +
                  std::strerror(err));
    }
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  handle_ = ::dlopen(file.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *msg = ::dlerror();
    throw Error(std::string("cannot load the artifact's generated kernels: ") +
                (msg ? msg : "dlopen failed"));
  }
  auto sym = [&](const char *name) {
    void *p = ::dlsym(handle_, name);
    if (!p) {
      ::dlclose(handle_);
      handle_ = nullptr;
      throw Error(std::string("the artifact's generated kernels lack the "
                              "symbol ") +
                  name + " (not a tcc kernel library?)");
    }
    return p;
  };
  int64_t abi = *static_cast<const int64_t *>(sym("tcc_fused_abi"));
  int64_t count = *static_cast<const int64_t *>(sym("tcc_fused_count"));
  auto fns = static_cast<const FusedFn *>(sym("tcc_fused_fns"));
  auto fins = static_cast<const FusedFin *>(sym("tcc_fused_fins"));
  auto offsets = static_cast<const int64_t *>(sym("tcc_fused_meta_offsets"));
  auto meta = static_cast<const int64_t *>(sym("tcc_fused_meta"));
  auto names = static_cast<const char *const *>(sym("tcc_fused_names"));
  if (abi != kFusedAbi) {
    ::dlclose(handle_);
    handle_ = nullptr;
    throw Error("the artifact's generated kernels use ABI version " +
                std::to_string(abi) + ", this runtime reads version " +
                std::to_string(kFusedAbi));
  }
  for (int64_t k = 0; k < count; ++k) {
    const int64_t *m = meta + offsets[k];
    Kernel kern;
    kern.fn = fns[k];
    kern.fin = fins[k];
    kern.rows = m[0];
    kern.cols = m[1];
    kern.scratchFloats = m[4];
    kern.partialsPerRow = m[5];
    kern.workPerElement = m[6];
    kern.colSums = m[8];
    kern.sliceRows = m[9];
    if (kern.colSums < 0 || kern.sliceRows < 0 ||
        (kern.colSums > 0 && kern.sliceRows == 0)) {
      ::dlclose(handle_);
      handle_ = nullptr;
      throw Error("generated kernel " + std::to_string(k) + " has " +
                  std::to_string(kern.colSums) +
                  " column sums over slices of " +
                  std::to_string(kern.sliceRows) + " rows");
    }
    kern.name = names[k] ? names[k] : "?";
    for (int64_t i = 0; i < m[2] + m[3]; ++i) {
      int64_t code = m[kFusedMetaHeader + 2 * i];
      if (code < 0 || code > 3) {
        ::dlclose(handle_);
        handle_ = nullptr;
        throw Error("generated kernel " + std::to_string(k) +
                    " has an operand of unknown dtype code " +
                    std::to_string(code));
      }
      const DType types[] = {DType::F32, DType::I64, DType::BF16, DType::F16};
      auto pair = std::make_pair(types[code], m[kFusedMetaHeader + 2 * i + 1]);
      (i < m[2] ? kern.inputs : kern.outputs).push_back(pair);
    }
    const int64_t *pairs = m + kFusedMetaHeader + 2 * (m[2] + m[3]);
    for (int64_t p = 0; p < m[7]; ++p)
      kern.inPlace.push_back({pairs[2 * p], pairs[2 * p + 1]});
    kernels_.push_back(std::move(kern));
  }
}

FusedLibrary::~FusedLibrary() {
  if (handle_)
    ::dlclose(handle_);
}

void FusedLibrary::check(const Instr &instr,
                         const std::vector<TensorInfo> &tensors) const {
  int64_t k = abi::attrs<abi::KernelId::Fused>(instr).kernel;
  if (k < 0 || k >= static_cast<int64_t>(kernels_.size()))
    throw Error("generated kernel " + std::to_string(k) +
                " does not exist (the library has " +
                std::to_string(kernels_.size()) + ")");
  checkFusedOperands(instr, tensors, k, kernels_[k].inputs, kernels_[k].outputs,
                     kernels_[k].inPlace);
}

namespace kernels {

/// Work below this (elements times the kernel's work per element) runs on
/// the calling thread: waking the pool would cost more than it saves. (The
/// pool's workers still spin from the kernel before; ResNet-18's 32x32
/// layers, 2^17 elements, gain from two threads.)
static constexpr int64_t kMinParallelWork = 1 << 16;

void run_fused(const KernelArgs &a) {
  if (!a.fused)
    throw Error("the fused kernel needs the artifact's generated kernels");
  const FusedLibrary::Kernel &k =
      a.fused->kernel(abi::attrs<KernelId::Fused>(a.instr).kernel);
  std::vector<void *> buffers;
  for (const TensorView &v : a.in)
    buffers.push_back(v.data);
  for (const TensorView &v : a.out)
    buffers.push_back(v.data);
  std::vector<double> partials(static_cast<size_t>(k.partialCount()), 0.0);
  ThreadPool &pool = ThreadPool::global();
  // Column sums: chunks of whole slices (each slice one thread's rows).
  int64_t grain = k.colSums ? k.sliceRows : 1;
  int64_t units = (k.rows + grain - 1) / grain;
  int64_t chunks = 1;
  if (k.rows * k.cols * k.workPerElement >= kMinParallelWork)
    chunks = std::min<int64_t>(4 * (int64_t)pool.size(), units);
  struct ChunkError {
    int rc = 0;
    int64_t err[3] = {0, 0, 0};
  };
  std::vector<ChunkError> errors(static_cast<size_t>(chunks));
  pool.parallelFor(chunks, [&](int64_t c) {
    thread_local std::vector<float> scratch;
    if (scratch.size() < static_cast<size_t>(k.scratchFloats)) {
      noteKernelScratch(static_cast<int64_t>(
          (k.scratchFloats - scratch.size()) * sizeof(float)));
      scratch.resize(static_cast<size_t>(k.scratchFloats));
    }
    int64_t r0 = std::min(k.rows, units * c / chunks * grain),
            r1 = std::min(k.rows, units * (c + 1) / chunks * grain);
    errors[c].rc = k.fn(buffers.data(), r0, r1, scratch.data(), partials.data(),
                        errors[c].err);
  });
  for (const ChunkError &e : errors) // the first failing row, whatever ran
    if (e.rc != 0)
      throw Error("label " + std::to_string(e.err[1]) + " at position " +
                  std::to_string(e.err[0]) + " is outside [0, " +
                  std::to_string(e.err[2]) + ")");
  if (k.fin)
    k.fin(buffers.data(), partials.data());
}

} // namespace kernels
} // namespace tcc::rt

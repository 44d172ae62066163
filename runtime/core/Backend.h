//===- Backend.h - Backends and their registry ------------------*- C++ -*-===//
//
// A backend opens Sessions (runtime/core/Session.h) of an artifact on its
// device. Backends register themselves when their library loads (a static
// BackendRegistration): the CPU backend is part of the runtime library; any
// other lives in a module of its own, libtcc_backend_NAME.so beside the
// runtime library, which find() loads the first time NAME is asked for.
// So a process that never asks for the GPU never maps the CUDA libraries.
//
// Device selection (runtime/core/DeviceSelect.h) walks this registry.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_BACKEND_H
#define TCC_RUNTIME_CORE_BACKEND_H

#include "runtime/core/Artifact.h"
#include "runtime/core/Session.h"
#include "runtime/core/abi/KernelAbi.h"

#include <memory>
#include <string>
#include <vector>

namespace tcc::rt {

/// What a session may be asked for beyond the mode. A backend reads the
/// options that concern it and ignores the others.
struct SessionOptions {
  /// CUDA: fp32 GEMMs on TF32 tensor cores.
  bool tf32 = false;
  /// CUDA: compiled runs replay each program as a CUDA graph.
  bool graphs = true;
  /// CUDA: matmul_epilogue as one cuBLASLt GEMM with its epilogue (false:
  /// a plain GEMM and element-wise kernels; tests run both).
  bool gemmEpilogues = true;
  /// CUDA: the GPU to run on, an ordinal among the visible devices, taken
  /// modulo their count (a data-parallel rank passes its local rank, so
  /// ranks sharing a node spread over its GPUs; CUDA_VISIBLE_DEVICES
  /// chooses which ones). -1: the first.
  int gpu = -1;
  /// The data-parallel rank this session trains as (0 in one process; the
  /// training loop passes launchInfo().rank). Dropout numbers rank r's
  /// elements from r * n (n: the op's element count), so that N ranks at
  /// batch B draw the masks one process draws at N * B when the batch leads
  /// the dropped tensor. Fixed for the session's life: static plans and
  /// captured CUDA graphs stay valid.
  int64_t rank = 0;
};

class Backend {
public:
  virtual ~Backend() = default;
  /// "cpu", "cuda": what --device names it.
  virtual const char *name() const = 0;
  /// Whether this machine can open sessions here; else `why` says why in a
  /// user's terms ("no CUDA driver (...)", "no CUDA device"). Never throws.
  virtual bool available(std::string *why) const = 0;
  /// Whether artifact `a` carries code this backend runs (the CPU: always;
  /// CUDA: device code, tcc compile --target cuda).
  virtual bool runs(const Artifact &a) const = 0;
  /// Whether this backend's dispatch table runs kernel `id` (false: its
  /// sessions refuse an artifact that calls it, naming the kernel). What the
  /// conformance suite checks a backend against (tests/unit/KernelCases.h).
  virtual bool hasKernel(abi::KernelId id) const = 0;
  /// The device in a user's words; Error when not available().
  virtual std::string deviceDescription() const = 0;
  /// Bytes a session could allocate on the device now (free device memory;
  /// the CPU: the kernel's MemAvailable), 0 where unknown. What
  /// `tcc tune-batch` fits a batch into when no budget is given.
  virtual int64_t memoryBytes() const { return 0; }
  /// Loads `a`: validates it against this backend's kernels, allocates
  /// and fills the persistent tensors. Error saying what is wrong.
  virtual std::unique_ptr<Session> open(const Artifact &a, ExecMode mode,
                                        const SessionOptions &o) const = 0;
};

/// Registers a backend as its library loads: one static object per
/// backend, `static BackendRegistration r(std::make_unique<CpuBackend>());`.
struct BackendRegistration {
  explicit BackendRegistration(std::unique_ptr<Backend> b);
};

namespace backends {

/// The backend named `name`: a registered one, else the one its module
/// (libtcc_backend_NAME.so beside the runtime library) registers when
/// loaded now. Null when there is none; `why` then says why ("this runtime
/// has no 'x' backend (it has: cpu, cuda)", or the loader's error).
const Backend *find(const std::string &name, std::string *why = nullptr);
/// Whether `name` is registered now, without loading anything.
bool loaded(const std::string &name);
/// Every backend this runtime has: registered ones and modules beside the
/// runtime library, sorted; "cpu" first.
std::vector<std::string> names();
/// Where modules are looked for (the runtime library's directory).
std::string moduleDirectory();

} // namespace backends

/// Opens `a` on the backend named `backend` (find(), then open()). Error
/// naming the backend when there is none.
std::unique_ptr<Session> openSession(const std::string &backend,
                                     const Artifact &a, ExecMode mode,
                                     const SessionOptions &o = {});

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_BACKEND_H

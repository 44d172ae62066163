//===- DeviceSelect.h - Which device runs an artifact: --device -*- C++ -*-===//
//
// `tcc train` and `tcc-run` take `--device auto|cpu|cuda`:
//  - auto: the GPU when the artifact has device code (tcc compile --target
//    cuda) and a GPU is usable, else the CPU; a note says which and why;
//  - cuda: the GPU, or an Error saying why not (no GPU, or an artifact
//    compiled for the CPU only);
//  - cpu: the CPU, also for an artifact compiled for CUDA (it carries the
//    host code as well).
// No CUDA header: it asks runtime/cuda/CudaSession.h's deviceAvailable().
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_DEVICESELECT_H
#define TCC_RUNTIME_CUDA_DEVICESELECT_H

#include "runtime/core/Artifact.h"

#include <string>

namespace tcc::rt {

enum class DeviceRequest { Auto, Cpu, Cuda };
enum class Device { Cpu, Cuda };

/// "auto", "cpu" or "cuda"; Error "--device must be auto, cpu or cuda, got
/// 'X'" otherwise.
DeviceRequest parseDeviceRequest(const std::string &s);
const char *deviceName(Device d); // "cpu", "cuda"

struct DeviceChoice {
  Device device = Device::Cpu;
  /// One line for stderr saying which device and why ("" when there is
  /// nothing to say: the device was asked for and is used as is).
  std::string note;
};

/// What the machine offers, so the choice can be tested without a GPU.
struct DeviceProbe {
  bool gpu = false;
  std::string whyNoGpu; // deviceAvailable()'s reason when !gpu
};
/// deviceAvailable() of this machine (and build).
DeviceProbe probeDevices();
/// Throws Error "--device cuda: no GPU: REASON" when `probe` found none.
/// Tools call it for --device cuda before reading the artifact.
void requireGpu(const DeviceProbe &probe);

/// Chooses the device for artifact `a` (named `what` in messages). Throws
/// Error: "--device cuda: no GPU: REASON" (checked first), or "--device
/// cuda: WHAT was compiled for the CPU only; recompile with tcc compile
/// --target cuda".
DeviceChoice selectDevice(DeviceRequest req, const Artifact &a,
                          const std::string &what, const DeviceProbe &probe);
/// The same, probing this machine only when the request needs it.
DeviceChoice selectDevice(DeviceRequest req, const Artifact &a,
                          const std::string &what);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CUDA_DEVICESELECT_H

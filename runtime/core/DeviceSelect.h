//===- DeviceSelect.h - Which device runs an artifact: --device -*- C++ -*-===//
//
// `tcc train` and `tcc-run` take `--device auto|cpu|cuda`:
//  - auto: the GPU when the artifact has device code (tcc compile --target
//    cuda) and a GPU is usable, else the CPU; a note says which and why;
//  - cuda: the GPU, or an Error saying why not (no GPU, or an artifact
//    compiled for the CPU only);
//  - cpu: the CPU, also for an artifact compiled for CUDA (it carries the
//    host code as well).
// It asks the registry (runtime/core/Backend.h): whether the backend that
// runs the artifact's device code can be loaded and sees a device. Nothing
// is loaded for a request the answer does not change (an artifact without
// device code under auto, or --device cpu).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_DEVICESELECT_H
#define TCC_RUNTIME_CORE_DEVICESELECT_H

#include "runtime/core/Artifact.h"

#include <string>

namespace tcc::rt {

enum class DeviceRequest { Auto, Cpu, Cuda };
enum class Device { Cpu, Cuda };

/// "auto", "cpu" or "cuda"; Error "--device must be auto, cpu or cuda, got
/// 'X'" otherwise.
DeviceRequest parseDeviceRequest(const std::string &s);
/// The backend's name: "cpu", "cuda".
const char *deviceName(Device d);

struct DeviceChoice {
  Device device = Device::Cpu;
  /// One line for stderr saying which device and why ("" when there is
  /// nothing to say: the device was asked for and is used as is).
  std::string note;
};

/// What the machine offers, so the choice can be tested without a GPU.
struct DeviceProbe {
  bool gpu = false;
  std::string whyNoGpu; // why the cuda backend is not available when !gpu
};
/// The cuda backend on this machine: loaded (its module) and available.
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

#endif // TCC_RUNTIME_CORE_DEVICESELECT_H

//===- DeviceSelect.cpp - Which device runs an artifact: --device ---------===//
#include "runtime/core/DeviceSelect.h"

#include "runtime/core/Backend.h"

using namespace tcc::rt;

DeviceRequest tcc::rt::parseDeviceRequest(const std::string &s) {
  if (s == "auto")
    return DeviceRequest::Auto;
  if (s == "cpu")
    return DeviceRequest::Cpu;
  if (s == "cuda")
    return DeviceRequest::Cuda;
  throw Error("--device must be auto, cpu or cuda, got '" + s + "'");
}

const char *tcc::rt::deviceName(Device d) {
  return d == Device::Cuda ? "cuda" : "cpu";
}

DeviceProbe tcc::rt::probeDevices() {
  DeviceProbe p;
  std::string why;
  const Backend *b = backends::find(deviceName(Device::Cuda), &why);
  p.gpu = b && b->available(&why);
  if (!p.gpu)
    p.whyNoGpu = why;
  return p;
}

void tcc::rt::requireGpu(const DeviceProbe &probe) {
  if (!probe.gpu)
    throw Error("--device cuda: no GPU: " + probe.whyNoGpu);
}

DeviceChoice tcc::rt::selectDevice(DeviceRequest req, const Artifact &a,
                                   const std::string &what,
                                   const DeviceProbe &probe) {
  bool deviceCode = a.device.present();
  DeviceChoice c;
  switch (req) {
  case DeviceRequest::Cpu:
    c.device = Device::Cpu;
    if (deviceCode)
      c.note = "device cpu (--device cpu): running the host code of " + what +
               ", which was compiled for CUDA";
    return c;
  case DeviceRequest::Cuda:
    // The machine first: without a GPU no artifact runs on one.
    requireGpu(probe);
    if (!deviceCode)
      throw Error("--device cuda: " + what +
                  " was compiled for the CPU only; recompile with tcc "
                  "compile --target cuda");
    c.device = Device::Cuda;
    return c;
  case DeviceRequest::Auto:
    break;
  }
  if (!deviceCode) {
    c.device = Device::Cpu;
    c.note = "device cpu (--device auto): " + what +
             " was compiled for the CPU only";
  } else if (!probe.gpu) {
    c.device = Device::Cpu;
    c.note = "device cpu (--device auto): " + what +
             " has CUDA code but there is no GPU (" + probe.whyNoGpu +
             "); running its host code";
  } else {
    c.device = Device::Cuda;
    c.note = "device cuda (--device auto): " + what +
             " has CUDA code and a GPU is present";
  }
  return c;
}

DeviceChoice tcc::rt::selectDevice(DeviceRequest req, const Artifact &a,
                                   const std::string &what) {
  // Probing loads the CUDA driver: only when the answer matters (an auto
  // choice for a CPU artifact is the CPU whatever is there).
  DeviceProbe probe;
  if (req == DeviceRequest::Cuda ||
      (req == DeviceRequest::Auto && a.device.present()))
    probe = probeDevices();
  return selectDevice(req, a, what, probe);
}

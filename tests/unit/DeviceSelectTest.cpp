//===- DeviceSelectTest.cpp - --device auto|cpu|cuda ----------------------===//
//
// The choice for every request, artifact kind and machine (the machine is
// a DeviceProbe, so the GPU cases run without one), and the choice on this
// machine.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/DeviceSelect.h"

#include <gtest/gtest.h>

using namespace tcc::rt;

namespace {

Artifact cpuArtifact() { return Artifact(); }

Artifact cudaArtifact() {
  Artifact a;
  a.device.arch = "sm_90a";
  a.device.offset = 0; // present(): the cubin's place in the blob
  a.device.size = 16;
  return a;
}

DeviceProbe noGpu() {
  DeviceProbe p;
  p.gpu = false;
  p.whyNoGpu = "no CUDA driver (cudaGetDeviceCount: CUDA driver version is "
               "insufficient for CUDA runtime version)";
  return p;
}

DeviceProbe gpu() {
  DeviceProbe p;
  p.gpu = true;
  return p;
}

std::string errorOf(DeviceRequest r, const Artifact &a, const DeviceProbe &p) {
  try {
    selectDevice(r, a, "m.tcc", p);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(DeviceSelect, ParsesTheThreeRequests) {
  EXPECT_EQ(parseDeviceRequest("auto"), DeviceRequest::Auto);
  EXPECT_EQ(parseDeviceRequest("cpu"), DeviceRequest::Cpu);
  EXPECT_EQ(parseDeviceRequest("cuda"), DeviceRequest::Cuda);
  try {
    parseDeviceRequest("gpu");
    FAIL() << "'gpu' was accepted";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "--device must be auto, cpu or cuda, got 'gpu'");
  }
  EXPECT_THROW(parseDeviceRequest(""), Error);
  EXPECT_THROW(parseDeviceRequest("CUDA"), Error);
  EXPECT_STREQ(deviceName(Device::Cpu), "cpu");
  EXPECT_STREQ(deviceName(Device::Cuda), "cuda");
}

TEST(DeviceSelect, AutoWithoutGpuRunsOnTheCpuAndSaysWhy) {
  DeviceChoice c =
      selectDevice(DeviceRequest::Auto, cudaArtifact(), "m.tcc", noGpu());
  EXPECT_EQ(c.device, Device::Cpu);
  EXPECT_EQ(c.note, "device cpu (--device auto): m.tcc has CUDA code but "
                    "there is no GPU (no CUDA driver (cudaGetDeviceCount: "
                    "CUDA driver version is insufficient for CUDA runtime "
                    "version)); running its host code");
}

TEST(DeviceSelect, AutoPicksTheGpuOnlyForDeviceCode) {
  DeviceChoice c =
      selectDevice(DeviceRequest::Auto, cudaArtifact(), "m.tcc", gpu());
  EXPECT_EQ(c.device, Device::Cuda);
  EXPECT_EQ(c.note,
            "device cuda (--device auto): m.tcc has CUDA code and a GPU is "
            "present");
  // A CPU artifact stays on the CPU, GPU or not.
  for (const DeviceProbe &p : {gpu(), noGpu()}) {
    c = selectDevice(DeviceRequest::Auto, cpuArtifact(), "m.tcc", p);
    EXPECT_EQ(c.device, Device::Cpu);
    EXPECT_EQ(
        c.note,
        "device cpu (--device auto): m.tcc was compiled for the CPU only");
  }
}

TEST(DeviceSelect, CudaWithoutGpuIsAnError) {
  // The machine is checked first: no GPU, whatever the artifact.
  for (const Artifact &a : {cpuArtifact(), cudaArtifact()})
    EXPECT_EQ(errorOf(DeviceRequest::Cuda, a, noGpu()),
              "--device cuda: no GPU: no CUDA driver (cudaGetDeviceCount: "
              "CUDA driver version is insufficient for CUDA runtime version)");
}

TEST(DeviceSelect, CudaForACpuArtifactIsAnError) {
  EXPECT_EQ(errorOf(DeviceRequest::Cuda, cpuArtifact(), gpu()),
            "--device cuda: m.tcc was compiled for the CPU only; recompile "
            "with tcc compile --target cuda");
  DeviceChoice c =
      selectDevice(DeviceRequest::Cuda, cudaArtifact(), "m.tcc", gpu());
  EXPECT_EQ(c.device, Device::Cuda);
  EXPECT_EQ(c.note, ""); // asked for and given: nothing to say
}

TEST(DeviceSelect, CpuRunsTheHostCodeOfACudaArtifact) {
  DeviceChoice c =
      selectDevice(DeviceRequest::Cpu, cudaArtifact(), "m.tcc", gpu());
  EXPECT_EQ(c.device, Device::Cpu);
  EXPECT_EQ(c.note, "device cpu (--device cpu): running the host code of "
                    "m.tcc, which was compiled for CUDA");
  c = selectDevice(DeviceRequest::Cpu, cpuArtifact(), "m.tcc", noGpu());
  EXPECT_EQ(c.device, Device::Cpu);
  EXPECT_EQ(c.note, "");
}

TEST(DeviceSelect, RequireGpu) {
  EXPECT_NO_THROW(requireGpu(gpu()));
  try {
    requireGpu(noGpu());
    FAIL() << "no error without a GPU";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()).rfind("--device cuda: no GPU: no CUDA "
                                          "driver",
                                          0),
              0u);
  }
}

// This machine, through deviceAvailable(): without a GPU (the CI machines,
// or a build without CUDA) auto falls back to the CPU with the reason, and
// cuda is an Error naming it.
TEST(DeviceSelect, ThisMachine) {
  DeviceProbe p = probeDevices();
  if (p.gpu)
    GTEST_SKIP() << "a GPU is present; tests/gpu/run.sh covers it";
  EXPECT_FALSE(p.whyNoGpu.empty());
  DeviceChoice c = selectDevice(DeviceRequest::Auto, cudaArtifact(), "m.tcc");
  EXPECT_EQ(c.device, Device::Cpu);
  EXPECT_NE(c.note.find("there is no GPU (" + p.whyNoGpu + ")"),
            std::string::npos)
      << c.note;
  try {
    selectDevice(DeviceRequest::Cuda, cpuArtifact(), "m.tcc");
    FAIL() << "--device cuda was accepted without a GPU";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()), "--device cuda: no GPU: " + p.whyNoGpu);
  }
}

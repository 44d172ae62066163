//===- CudaWgmmaProbeEmu.cpp - The wgmma probe's kernel in the emulator ---===//
//
// CudaWgmmaProbe.cu compiled as C++ on the emulator (the way the runtime's
// kernels are, CudaKernelEmu.h); a wrapper, because tcc_unit_tests builds
// the same file with nvcc and a source file has one language per
// directory.
//
//===----------------------------------------------------------------------===//
#include "CudaKernelEmu.h"

#include "CudaWgmmaProbe.cu"

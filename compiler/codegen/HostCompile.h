//===- HostCompile.h - Compiling generated C++ into a shared object -*- C++
//-*-===//
#ifndef TCC_COMPILER_CODEGEN_HOSTCOMPILE_H
#define TCC_COMPILER_CODEGEN_HOSTCOMPILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace tcc {

struct HostLibrary {
  std::vector<uint8_t> bytes; // the shared object
  std::string isa;            // what it was compiled for (rt::hostIsa())
  std::string compiler;       // the compiler that built it
  double seconds = 0;         // time the compiler took
};

/// Compiles `source` with the host C++ compiler (TCC_HOST_CXX, else `c++`,
/// else `g++`, else `clang++` on PATH) at -O3 into a shared object for
/// `isa` ("x86-64-v4", "x86-64-v3", "x86-64"/"generic"; empty: the widest
/// this CPU runs, rt::hostIsa()), in a temporary directory that is removed
/// afterwards, or reads the library an earlier compile of the same source
/// with the same compiler and ISA left in the kernel cache (KernelCache.h,
/// kind "host"). Returns false with `error` holding the compiler's command
/// and output.
bool compileHostLibrary(const std::string &source, HostLibrary &out,
                        std::string &error, const std::string &isa = "");

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_HOSTCOMPILE_H

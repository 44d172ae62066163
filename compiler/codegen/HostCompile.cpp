//===- HostCompile.cpp - Compiling generated C++ into a shared object -----===//
//
// Flags: -O3 -fPIC -shared; -fno-math-errno (sqrt and friends vectorize) and
// -fno-trapping-math (selects on floats if-convert, so the loops vectorize);
// not -ffast-math, which would let the compiler assume no NaN or Inf and
// reassociate sums, breaking NaN propagation and determinism. The ISA is
// the caller's choice (tcc compile --cpu-isa), by default the widest this
// CPU runs (rt::hostIsa()): -march=x86-64-v4 (AVX-512; see ISA_FLAGS
// below), x86-64-v3 (AVX2, FMA), or none. The artifact records it and the
// runtime refuses it on a CPU without it.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/HostCompile.h"
#include "compiler/codegen/KernelCache.h"

#include "runtime/core/abi/FusedAbi.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdlib>

using namespace llvm;

static const char *const kFlags[] = {
    "-std=c++17",         "-O3", "-fPIC", "-shared", "-fno-math-errno",
    "-fno-trapping-math", "-w"};

static std::string findCompiler(std::string &error) {
  if (const char *env = std::getenv("TCC_HOST_CXX"); env && *env) {
    if (sys::path::is_absolute(env))
      return env;
    if (auto p = sys::findProgramByName(env))
      return *p;
    error = std::string("TCC_HOST_CXX='") + env + "' is not on PATH";
    return "";
  }
  for (const char *name : {"c++", "g++", "clang++"})
    if (auto p = sys::findProgramByName(name))
      return *p;
  error = "no C++ compiler found (looked for c++, g++ and clang++ on PATH; "
          "set TCC_HOST_CXX)";
  return "";
}

namespace {
/// A temporary directory removed with everything in it.
struct TempDir {
  SmallString<128> path;
  ~TempDir() {
    if (!path.empty())
      sys::fs::remove_directories(path);
  }
};
} // namespace

bool tcc::compileHostLibrary(const std::string &source, HostLibrary &out,
                             std::string &error, const std::string &isa) {
  try {
    out.isa = isa.empty() ? tcc::rt::hostIsa() : isa;
  } catch (const std::exception &e) { // a malformed TCC_HOST_ISA
    error = e.what();
    return false;
  }
  if (out.isa == "x86-64")
    out.isa = "generic";
  if (!tcc::rt::knownIsa(out.isa)) {
    error = "unknown CPU ISA '" + out.isa +
            "' (expected x86-64-v4, x86-64-v3, x86-64 or native)";
    return false;
  }
  std::string cxx = findCompiler(error);
  if (cxx.empty())
    return false;
  // The cache key names the compiler by its resolved file, size and time
  // (`c++` is a chain of links to one GCC; an upgrade changes the file),
  // the flags that differ between builds (the ISA) and the source.
  std::string identity = cxx;
  {
    SmallString<256> real;
    sys::fs::file_status st;
    if (!sys::fs::real_path(cxx, real) && !sys::fs::status(real, st))
      identity = std::string(real) + " " + std::to_string(st.getSize()) + " " +
                 std::to_string(sys::toTimeT(st.getLastModificationTime()));
  }
  std::string flags;
  for (const char *f : kFlags)
    flags += std::string(f) + " ";
  std::string key =
      kernelCacheKey({"host", identity, flags, out.isa,
                      std::to_string(tcc::rt::kFusedAbi), source});
  if (std::optional<std::vector<uint8_t>> hit = kernelCacheGet("host", key)) {
    out.bytes = std::move(*hit);
    out.compiler = cxx;
    out.seconds = 0;
    return true;
  }
  TempDir dir;
  if (std::error_code ec =
          sys::fs::createUniqueDirectory("tcc-fused", dir.path)) {
    error = "cannot create a temporary directory: " + ec.message();
    return false;
  }
  SmallString<128> src(dir.path), lib(dir.path), log(dir.path);
  sys::path::append(src, "kernels.cpp");
  sys::path::append(lib, "kernels.so");
  sys::path::append(log, "compiler.log");
  {
    std::error_code ec;
    raw_fd_ostream os(src, ec);
    if (ec) {
      error = "cannot write " + src.str().str() + ": " + ec.message();
      return false;
    }
    os << source;
  }
  std::vector<std::string> args = {cxx};
  args.insert(args.end(), std::begin(kFlags), std::end(kFlags));
  // ISA_FLAGS: "generic" builds for baseline x86-64 (SSE2). x86-64-v4 keeps
  // GCC's 256-bit preference for loops: 512-bit vectors measured no faster
  // on Zen 4 (which splits them) and lower the clock of some Intel parts
  // (benchmarks/results/cpu_isa_threads_2026-11-28.md).
  if (out.isa != "generic")
    args.push_back("-march=" + out.isa);
  args.insert(args.end(), {"-o", lib.str().str(), src.str().str()});
  SmallVector<StringRef> argRefs(args.begin(), args.end());
  std::optional<StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  std::string execError;
  auto t0 = std::chrono::steady_clock::now();
  int rc =
      sys::ExecuteAndWait(cxx, argRefs, std::nullopt, redirects,
                          /*SecondsToWait=*/600, /*MemoryLimit=*/0, &execError);
  out.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  std::string command;
  for (const std::string &a : args)
    command += (command.empty() ? "" : " ") + a;
  if (rc != 0) {
    std::string output;
    if (auto buf = MemoryBuffer::getFile(log))
      output = (*buf)->getBuffer().str();
    if (output.size() > 4000)
      output = output.substr(0, 4000) + "\n[...]";
    error = "the host C++ compiler failed to build the fused kernels (" +
            (rc < 0 ? execError : "exit code " + std::to_string(rc)) +
            ")\n  command: " + command +
            (output.empty() ? "" : "\n  output:\n" + output);
    return false;
  }
  auto buf = MemoryBuffer::getFile(lib, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf) {
    error = "the host C++ compiler produced no " + lib.str().str() +
            "\n  command: " + command;
    return false;
  }
  out.bytes.assign((*buf)->getBufferStart(), (*buf)->getBufferEnd());
  out.compiler = cxx;
  kernelCachePut("host", key, out.bytes);
  return true;
}

//===- CudaCodegen.cpp - CUDA C for tcc.fused regions ---------------------===//
//
// Each region's node graph is built exactly as for the host library
// (KernelGen::analyze, FusedCodegen.cpp) and written as CUDA C by
// CudaEmit.cpp, so both devices compute the same formulas.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/CudaCodegen.h"

#include "compiler/codegen/FusedCodegenInternal.h"
#include "compiler/codegen/KernelDedup.h"

using namespace mlir;
using namespace ::tcc::fusedgen;

namespace tcc {
FailureOr<CudaSource> generateCudaSource(ArrayRef<Operation *> fusedOps,
                                         int arch) {
  CudaSource out;
  out.source = std::string(cudaPrelude()) + "\n";
  KernelDedup dedup;
  for (auto [i, o] : llvm::enumerate(fusedOps)) {
    auto f = cast<FusedOp>(o);
    f.setKernel(static_cast<int64_t>(i));
    KernelGen gen(f, (int)i);
    if (failed(gen.analyze()))
      return failure();
    std::string code;
    rt::DeviceKernel k;
    if (failed(emitCudaKernel(gen, arch, code, k)))
      return failure();
    // A repeat launches the earlier kernel's symbols (same parameters,
    // same code); the launch table keeps its own entry.
    int64_t same = dedup.find(code, (int64_t)i);
    if (same >= 0) {
      k.symbol = out.kernels[same].symbol;
      k.finSymbol = out.kernels[same].finSymbol;
      out.source += "// kernel " + std::to_string(i) + ": the code of kernel " +
                    std::to_string(same) + "\n";
    } else {
      out.source += code + "\n";
    }
    out.kernels.push_back(std::move(k));
  }
  return out;
}

FailureOr<CudaSource> generateCudaSource(ModuleOp module, int arch) {
  SmallVector<Operation *> ops;
  module.walk([&](FusedOp f) { ops.push_back(f); });
  return generateCudaSource(ops, arch);
}

int computeCapabilityOf(llvm::StringRef gpuArch) {
  int cc = 0;
  if (!gpuArch.consume_front("sm_") ||
      gpuArch.take_while([](char c) { return c >= '0' && c <= '9'; })
          .getAsInteger(10, cc))
    return 0;
  return cc;
}
} // namespace tcc

//===- CudaCodegen.h - CUDA C for tcc.fused regions -------------*- C++ -*-===//
//
// `tcc compile --target cuda`: every tcc.fused op of a module becomes one
// CUDA kernel (plus a `_fin` kernel for losses) in one program, which
// NvrtcCompile.h turns into the cubin the artifact carries. The kernels are
// numbered like the host library's (FusedCodegen.h), so kernel k serves the
// `fused` instrs with i [k] on either device. ABI: runtime/core/Artifact.h,
// the comment above DeviceKernel.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_COMPILER_CODEGEN_CUDACODEGEN_H
#define TCC_COMPILER_CODEGEN_CUDACODEGEN_H

#include "runtime/core/Artifact.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace tcc {

struct CudaSource {
  std::string source;                    // prelude + every kernel
  std::vector<rt::DeviceKernel> kernels; // the launch table, kernel k at [k]
};

/// Numbers the tcc.fused ops of `module` in walk order (their `kernel`
/// attribute, as generateFusedSource does) and returns the CUDA source of
/// their kernels with the launch table, or emits an error on an op it
/// cannot generate. With no fused op the source is the prelude alone.
/// `arch`: the compute capability the code is for (computeCapabilityOf
/// --gpu-arch), 0 for code that runs on any GPU; from 90 (sm_90a) the
/// kernels of a vocabulary's rows double-buffer them with bulk copies.
mlir::FailureOr<CudaSource> generateCudaSource(mlir::ModuleOp module,
                                               int arch = 0);

/// Source for the given ops only (numbered 0..n-1, `kernel` set); for tests.
mlir::FailureOr<CudaSource>
generateCudaSource(llvm::ArrayRef<mlir::Operation *> fusedOps, int arch = 0);

/// 90 for "sm_90a", 80 for "sm_80"; 0 for anything else.
int computeCapabilityOf(llvm::StringRef gpuArch);

} // namespace tcc

#endif // TCC_COMPILER_CODEGEN_CUDACODEGEN_H

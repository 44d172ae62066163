//===- CudaCodegenCases.h - The fused regions CudaCodegenTest compiles ----===//
//
// Functions of plain tcc ops, one per kind of region (element-wise with
// broadcasts, slices and pads, rows, reductions, the unary family...), that
// tcc-fuse turns into the regions whose CUDA C CudaCodegenTest checks.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_CUDACODEGENCASES_H
#define TCC_TESTS_UNIT_CUDACODEGENCASES_H

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::test {

struct CudaCodegenCase {
  std::string name, signature, body;
  std::string mapping; // of every region of the case
  /// rows x cols of the region's domain; 0: the largest operand's elements
  /// (a slice's input or a padded output is larger).
  int64_t domain = 0;
};

/// Each function's arguments are inputs, its results the region's outputs.
std::vector<CudaCodegenCase> cudaCodegenCases();

} // namespace tcc::test

#endif // TCC_TESTS_UNIT_CUDACODEGENCASES_H

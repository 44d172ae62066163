//===- KernelCases.cpp - Every kind's conformance cases, gathered ---------===//
//
// One list, built once per process: the parameterized tests name their
// cases at registration and each test then looks its case up here, so the
// random tensors (tens of MB for the attention cases) are made once.
//
//===----------------------------------------------------------------------===//
#include "KernelCases.h"
#include "KernelCasesAttention.h"
#include "KernelCasesConv.h"
#include "KernelCasesGemm.h"
#include "KernelCasesIndex.h"
#include "KernelCasesLayout.h"
#include "KernelCasesLinearCrossEntropy.h"
#include "KernelCasesLogic.h"
#include "KernelCasesMath.h"
#include "KernelCasesOptim.h"
#include "KernelCasesRows.h"
#include "KernelCasesShard.h"

namespace tcc::rt::test {

const std::vector<KernelCase> &allKernelCases() {
  static const std::vector<KernelCase> cases = [] {
    std::vector<KernelCase> all;
    // Element-wise and math.
    unaryCases(all);
    unaryFnCases(all);
    binaryCases(all);
    castWhereEqualCases(all);
    // Layout, data movement and reductions.
    dataMovementCases(all);
    reductionCases(all);
    indexCases(all);
    // Row kernels.
    softmaxLossCases(all);
    layerNormCases(all);
    linearCrossEntropyCases(all);
    // Optimizers, dropout, the step counter.
    optimizerCases(all);
    // GEMMs and their epilogues.
    matmulCases(all);
    gemmEpilogueCases(all);
    // Attention.
    attentionCases(all);
    // Comparisons, logic, extrema.
    compareLogicCases(all);
    extremumCases(all);
    modCases(all);
    reduceExtremumCases(all);
    reduceProdCumSumCases(all);
    argExtremumCases(all);
    // Convolution, pooling, batch norm.
    convCases(all);
    poolCases(all);
    batchNormCases(all);
    // Sharded optimizer state's collectives, at one rank.
    shardCases(all);
    return all;
  }();
  return cases;
}

const KernelCase &kernelCase(const std::string &name) {
  for (const KernelCase &c : allKernelCases())
    if (c.name == name)
      return c;
  throw Error("no kernel case named '" + name + "'");
}

std::vector<std::string> kernelCaseNames() {
  std::vector<std::string> names;
  for (const KernelCase &c : allKernelCases())
    names.push_back(c.name);
  return names;
}

} // namespace tcc::rt::test

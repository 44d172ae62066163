//===- GemmAlgoPick.h - Which timed cuBLASLt algorithm to keep -*- C++ -*-===//
//
// TCC_CUDA_GEMM_AUTOTUNE=N times N of cuBLASLt's heuristic answers on a
// problem's first call. Timed alone, back to back, a GEMM need not rank as
// it does inside a training step (on GPT-2 small the fastest-timed answer
// lost in the step for some GEMMs and won for others:
// benchmarks/results/design-measurements.md). So the
// candidates run in rounds, each once a round in turn (a clock or
// temperature drift then falls on all alike), each is scored by its median
// round, and the heuristic's answer stays unless another's median is
// shorter by more than a margin (TCC_CUDA_GEMM_AUTOTUNE_MARGIN percent).
//
// No CUDA here: the rule is tested where there is no GPU; CudaGemm.cpp
// times the runs.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_GEMMALGOPICK_H
#define TCC_RUNTIME_CUDA_GEMMALGOPICK_H

#include <cstddef>
#include <optional>
#include <vector>

namespace tcc::rt::cuda {

/// Rounds of timed runs a candidate gets (after one warm-up run).
inline constexpr int kGemmAutotuneRounds = 5;

/// The default TCC_CUDA_GEMM_AUTOTUNE_MARGIN, percent.
inline constexpr double kGemmAutotuneMarginPercent = 3.0;

/// The median of a candidate's runs, ignoring failed ones (NaN or < 0); none
/// when no run counts.
std::optional<double> medianRun(const std::vector<float> &ms);

/// Which candidate to keep, given ms[c][r], candidate c's time in round r
/// (NaN or negative: that run failed). Candidate 0 is the heuristic's
/// first answer: it is kept unless the candidate with the shortest median
/// beats its median by more than `marginPercent` percent of it. When
/// candidate 0 has no run that counts, the shortest median wins; when none
/// has, none.
std::optional<size_t> pickTimedAlgo(const std::vector<std::vector<float>> &ms,
                                    double marginPercent);

/// TCC_CUDA_GEMM_AUTOTUNE_MARGIN's value: a percentage from 0 to 50
/// (unset or empty: kGemmAutotuneMarginPercent); anything else throws
/// Error naming it.
double gemmAutotuneMargin(const char *value);

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_GEMMALGOPICK_H

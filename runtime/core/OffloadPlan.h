//===- OffloadPlan.h - Which side of an offloaded step holds what -*- C++
//-*-===//
//
// An artifact compiled with `tcc compile --offload-optimizer` has a program
// `optimizer_step` (tcc-offload-optimizer) beside the device programs
// (train_step, accumulate, forward): train_step writes the values the update
// reads into input tensors named `offload.*` (the gradients as clipped and
// averaged, fp16's finite flag), and optimizer_step reads them, the
// parameters and the optimizer state and writes the new parameters and
// state. The plan says, from the programs alone, what a runtime that runs
// the update on the host must hold and move: the state only the update
// touches lives on the host; each step the offload inputs go to the host
// and what the update writes that a device program reads (parameters, the
// 16-bit weight copies) comes back. The compiler's report prints it.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_OFFLOADPLAN_H
#define TCC_RUNTIME_CORE_OFFLOADPLAN_H

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::rt {

struct Artifact;

/// The name of the update program of an offloaded artifact.
inline constexpr const char *kOptimizerProgram = "optimizer_step";

struct OffloadPlan {
  /// Param and State tensors that only optimizer_step reads or writes: the
  /// device need not hold them (optimizer moments, counters, the rate).
  std::vector<int32_t> hostState;
  /// Input tensors a device program writes and optimizer_step reads.
  std::vector<int32_t> toHost;
  /// Param and State tensors optimizer_step writes that a device program
  /// reads: copied back after each update.
  std::vector<int32_t> toDevice;
  int64_t hostStateBytes = 0, toHostBytes = 0, toDeviceBytes = 0;
};

/// Whether `a` has an optimizer_step program.
bool isOffloaded(const Artifact &a);

/// The plan of `a` (empty when not offloaded). Error when the programs do not
/// split this way: a tensor both sides write, a parameter or state the update
/// reads that a device program writes, an input optimizer_step reads that no
/// device program writes, or a temporary of one read by the other.
OffloadPlan offloadPlan(const Artifact &a);

/// The artifact of the programs `names` alone, for a session that runs only
/// those: the tensors they read or write (and the parameters that 16-bit
/// copies among them are initialized from), in their order, renumbered.
/// `ids` gets, per id of `a`, the id in the result or -1. Meta, blob, host
/// library and device code are kept (a mapped blob is shared, not copied).
/// Error naming a program `a` lacks.
Artifact programSubset(const Artifact &a, const std::vector<std::string> &names,
                       std::vector<int32_t> &ids);

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_OFFLOADPLAN_H

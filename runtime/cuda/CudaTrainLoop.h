//===- CudaTrainLoop.h - GPU training, fed asynchronously -------*- C++ -*-===//
//
// The GPU counterpart of runtime/train/TrainLoop.h: the same options, the
// same batches in the same order (the same DataFeeder and token windows),
// gradient accumulation, run length, metrics lines, progress line,
// non-finite checks, checkpoints and resume (Checkpoint.h, through a host
// mirror of the parameters and state), with the steps run by a CudaSession.
//
// Feeding overlaps the GPU's work:
//  - `prefetch` pinned host slots and `prefetch` device input slots: the
//    host copies a batch from the feeder into a pinned slot and enqueues
//    its copy to the device slot on a dedicated copy stream;
//  - events order the two streams: the compute stream waits for the slot's
//    copy event before the step that reads it, and a slot is refilled only
//    after the compute event of the step that read it;
//  - the session's inputs are rebound to the slot (CudaSession::bindInput),
//    so no device-to-device copy happens;
//  - the loss (and the fp16 loss-scaling state) comes back through pinned
//    memory one step late: step N's values are read after step N+1 has
//    been enqueued, so the host never waits for the GPU to drain. Steps
//    that write a checkpoint or scan the parameters, and the last step,
//    are read back before the next one is enqueued.
// Timing: TrainResult::stepSeconds are GPU times (CUDA events) of each
// optimizer step without its waits for input copies, dataWaitSeconds the
// host time blocked on the feeder, copyWaitSeconds the GPU time the
// compute stream stood waiting for input copies.
//
// The header needs no CUDA header; without the CUDA backend every entry
// point throws Error "this runtime was built without the CUDA backend".
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CUDA_CUDATRAINLOOP_H
#define TCC_RUNTIME_CUDA_CUDATRAINLOOP_H

#include "runtime/cuda/CudaSession.h"
#include "runtime/train/TrainLoop.h"

#include <string>
#include <vector>

namespace tcc::rt::cuda {

/// Trains `session` (built from `artifact`) as tcc::rt::train does on the
/// CPU, with the same Errors ("step 12: the loss is NaN; ..."), plus CUDA
/// errors naming the failed call. opts.prefetch (at least 1) is both the
/// feeder's queue and the number of device input slots.
TrainResult trainOnGpu(CudaSession &session, const Artifact &artifact,
                       const TrainOptions &opts);

/// tcc::rt::evaluate on the GPU: the forward program over every full batch
/// of `data` (uploaded per batch), scored on the host.
EvalResult evaluateOnGpu(CudaSession &session, const Artifact &artifact,
                         const std::vector<DataBinding> &data);

/// GPU time in seconds of one run of `program` (CUDA events around it on the
/// session's stream; waits for it to finish).
double timeRun(CudaSession &session, const std::string &program);

} // namespace tcc::rt::cuda

#endif // TCC_RUNTIME_CUDA_CUDATRAINLOOP_H

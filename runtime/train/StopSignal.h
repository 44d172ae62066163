//===- StopSignal.h - Graceful stop on SIGINT/SIGTERM -----------*- C++ -*-===//
//
// The trainers (tcc train, tcc-run train) stop between steps on Ctrl-C or
// SIGTERM, after a checkpoint of that step (TrainOptions::stopSignal). The
// handler only stores the signal number into a lock-free atomic, which is
// async-signal-safe; the loop polls it.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_TRAIN_STOPSIGNAL_H
#define TCC_RUNTIME_TRAIN_STOPSIGNAL_H

#include <atomic>

namespace tcc::rt {

/// Installs the SIGINT and SIGTERM handlers for the rest of the process and
/// returns the flag they set: 0 while no signal came, else the number of
/// the first one (later ones, e.g. a second Ctrl-C while the last
/// checkpoint is written, are ignored so the checkpoint completes).
/// SA_RESTART: a checkpoint write in progress is not cut by EINTR.
const std::atomic<int> *installStopHandlers();

} // namespace tcc::rt

#endif // TCC_RUNTIME_TRAIN_STOPSIGNAL_H

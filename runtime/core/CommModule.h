//===- CommModule.h - The entry of the MPI communicator's module -*- C++
//-*-===//
//
// The MPI communicator lives in libtcc_comm_mpi.so (runtime/comm), beside
// libtcc_runtime.so, so that the runtime never links MPI: communicator()
// (Comm.cpp) dlopens the module when a run is launched as ranks and calls
// this one function of it.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_COMMMODULE_H
#define TCC_RUNTIME_CORE_COMMMODULE_H

#include "runtime/core/Comm.h"

#include <string>

/// Initializes MPI and returns this process's communicator (owned by the
/// caller, which keeps it for the life of the process). Null when MPI
/// cannot start; `error` then says why.
extern "C" tcc::rt::Communicator *tcc_comm_mpi_create(std::string *error);

namespace tcc::rt {
/// The module's file name, beside libtcc_runtime.so.
inline constexpr char kCommMpiModule[] = "libtcc_comm_mpi.so";

/// Loads the module from `directory` (communicator(): the runtime
/// library's) and starts MPI's communicator. Error when the module is not
/// there (tcc built without MPI), cannot be loaded, or MPI cannot start.
Communicator *loadMpiCommunicator(const std::string &directory);
} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_COMMMODULE_H

//===- Commands.h - The commands of tcc-run ---------------------*- C++ -*-===//
#ifndef TCC_TOOLS_TCC_RUN_COMMANDS_H
#define TCC_TOOLS_TCC_RUN_COMMANDS_H

namespace tcc::run {

/// Each takes the whole argv (argv[1] is the command) and returns the exit
/// status; errors are printed as "tcc-run COMMAND: error: MESSAGE".
int runTrain(int argc, char **argv);
int runBench(int argc, char **argv);
int runPredict(int argc, char **argv);
int runInfo(int argc, char **argv);

} // namespace tcc::run

#endif // TCC_TOOLS_TCC_RUN_COMMANDS_H

//===- tcc-opt.cpp - mlir-opt with the tcc dialect and passes -------------===//
#include "dialects/tcc/TccDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::tcc::TccDialect, mlir::func::FuncDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::tcc::registerTccPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tcc optimizer driver\n", registry));
}

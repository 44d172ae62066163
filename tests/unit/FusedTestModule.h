//===- FusedTestModule.h - Cases of tcc IR fused and lowered ----*- C++ -*-===//
//
// What the fused-kernel tests (FusedCodegenTest, FusedHalfTest,
// CudaCodegenTest, CudaHalfTest) do first: parse their cases as one module
// of functions, run tcc-fuse, and either generate the host and CUDA sources
// of the fused regions or lower every function into one artifact (with the
// host library compiled, or unfused for the library-kernel reference).
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TESTS_UNIT_FUSEDTESTMODULE_H
#define TCC_TESTS_UNIT_FUSEDTESTMODULE_H

#include "compiler/codegen/FusedCodegen.h"
#include "compiler/codegen/HostCompile.h"
#include "compiler/codegen/ScheduleBuilder.h"
#include "dialects/tcc/TccDialect.h"
#include "dialects/tcc/TccOps.h"
#include "passes/Passes.h"
#include "runtime/core/Artifact.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tcc::test {

/// Parses `text` (a module) in `ctx`; with `fuse`, runs tcc-fuse on every
/// function. Null (and a test failure) when either fails.
inline mlir::OwningOpRef<mlir::ModuleOp>
parseFused(mlir::MLIRContext &ctx, const std::string &text, bool fuse) {
  ctx.loadDialect<mlir::tcc::TccDialect, mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  EXPECT_TRUE(module) << "the cases do not parse";
  if (!module || !fuse)
    return module;
  mlir::PassManager pm(&ctx);
  pm.addNestedPass<mlir::func::FuncOp>(mlir::tcc::createFusePass());
  bool ok = mlir::succeeded(pm.run(*module));
  EXPECT_TRUE(ok) << "tcc-fuse failed";
  return ok ? std::move(module) : nullptr;
}

/// The fused ops of the functions `names` (in that order, each function's
/// in program order), with the index in `names` of each one's function.
inline std::vector<mlir::Operation *>
fusedOpsOf(mlir::ModuleOp module, const std::vector<std::string> &names,
           std::vector<size_t> &caseOf) {
  std::vector<mlir::Operation *> ops;
  for (size_t i = 0; i < names.size(); ++i)
    module.lookupSymbol<mlir::func::FuncOp>(names[i]).walk(
        [&](mlir::tcc::FusedOp f) {
          ops.push_back(f);
          caseOf.push_back(i);
        });
  return ops;
}

/// Cases with a name, a signature "(%a: ...) -> (...)" and a body that
/// ends with its return: one function each, in one module.
template <typename Case>
inline std::string caseModuleText(const std::vector<Case> &cases) {
  std::string text = "module {\n";
  for (const Case &c : cases)
    text += "func.func @" + c.name + c.signature + " {\n  " + c.body + "\n}\n";
  return text + "}\n";
}

/// The fused ops of `cases` (caseModuleText, tcc-fuse run on it, kept in
/// `module`), with the index of each one's case.
template <typename Case>
inline std::vector<mlir::Operation *>
fuseCases(mlir::MLIRContext &ctx, const std::vector<Case> &cases,
          mlir::OwningOpRef<mlir::ModuleOp> &module,
          std::vector<size_t> &caseOf) {
  module = parseFused(ctx, caseModuleText(cases), /*fuse=*/true);
  if (!module)
    return {};
  std::vector<std::string> names;
  for (const Case &c : cases)
    names.push_back(c.name);
  return fusedOpsOf(*module, names, caseOf);
}

/// Lowers the functions `names` of `text` into one artifact, each into the
/// program of its name. With `fuse`: tcc-fuse first, `checkFused(module)`
/// then, and the host library compiled into the artifact (its source in
/// `source` when given). An empty artifact (and a test failure) on error.
inline rt::Artifact
lowerCases(mlir::MLIRContext &ctx, const std::string &text,
           const std::vector<std::string> &names, bool fuse,
           std::string *source = nullptr,
           const std::function<void(mlir::ModuleOp)> &checkFused = {}) {
  rt::Artifact a;
  auto module = parseFused(ctx, text, fuse);
  if (!module)
    return a;
  if (fuse) {
    auto src = generateFusedSource(*module);
    EXPECT_TRUE(mlir::succeeded(src));
    if (mlir::failed(src))
      return a;
    if (source)
      *source = *src;
    HostLibrary lib;
    std::string err;
    EXPECT_TRUE(compileHostLibrary(*src, lib, err)) << err;
    a.hostLibOffset = a.addBlob(lib.bytes.data(), lib.bytes.size());
    a.hostLibSize = (int64_t)lib.bytes.size();
    a.hostLibIsa = lib.isa;
    if (checkFused)
      checkFused(*module);
  }
  std::map<std::string, std::vector<float>> init;
  ScheduleBuilder builder(a, init);
  for (const std::string &name : names)
    EXPECT_TRUE(mlir::succeeded(
        builder.lower(module->lookupSymbol<mlir::func::FuncOp>(name), name)));
  return a;
}

} // namespace tcc::test

#endif // TCC_TESTS_UNIT_FUSEDTESTMODULE_H

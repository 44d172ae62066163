//===- FusedCodegenInternal.h - Shared by the fused code generator --------===//
#ifndef TCC_COMPILER_CODEGEN_FUSEDCODEGENINTERNAL_H
#define TCC_COMPILER_CODEGEN_FUSEDCODEGENINTERNAL_H

#include "dialects/tcc/TccOps.h"
#include "passes/FusionModel.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tcc {
/// The fixed helpers every generated translation unit starts with.
const char *fusedPrelude();
} // namespace tcc

// The per-region generator: FusedCodegen.cpp builds its node graph from the
// region's ops, FusedEmit.cpp writes the C++.
namespace tcc::fusedgen {
using namespace mlir;
using namespace mlir::tcc;
using namespace mlir::tcc::fusion;
} // namespace tcc::fusedgen

namespace tcc::fusedgen {
enum class NodeKind { Load, Const, Expr, Reduce, Pick, Partial };

struct Node {
  NodeKind kind;
  bool vec = false, isInt = false;
  int time = 0;
  std::string tmpl; // Expr/Partial: template; Const: literal; Reduce: sum|max
  SmallVector<int> args;
  int input = -1, view = -1; // Load
  bool checkLabel = false;
  bool stored = false;
  int scratch = -1, output = -1; // where a stored vector lives
};

struct ViewVar {
  std::string offset; // C++ expression or variable name
  std::string code;   // computes the variable, if any
};

inline std::string floatLiteral(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f))
    return "__builtin_nanf(\"\")";
  if (std::isinf(f))
    return f < 0 ? "(-__builtin_inff())" : "__builtin_inff()";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", f);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  s += "f";
  return f < 0 ? "(" + s + ")" : s;
}

class KernelGen {
public:
  KernelGen(FusedOp op, int index) : op(op), index(index) {}
  LogicalResult run(std::string &code, std::vector<int64_t> &meta);

private:
  LogicalResult lower(Operation *o);
  FailureOr<int> use(Operation *o, unsigned i);
  int add(Node n);
  int expr(StringRef tmpl, ArrayRef<int> args, bool vec);
  int reduce(StringRef kind, int arg);
  int pick(int vecArg, int idx);
  int avail(int n) const { return nodes[n].time; }
  std::string ref(int n, int loopTime, StringRef j) const;
  /// Vectors read from memory in the loop being emitted, loaded once at its
  /// top: unconditional loads, so selects never become masked loads (GCC 12
  /// miscompiles some AVX2 masked loads).
  std::set<int> loopLocals;
  std::string ptr(int n) const;
  std::string subst(const Node &n, int loopTime, StringRef j) const;
  std::string viewOffset(int input, const View &v);

  FusedOp op;
  int index;
  Domain d;
  std::vector<Node> nodes;
  DenseMap<Value, int> valueNode;
  std::map<std::string, int> cse;
  std::vector<ViewVar> views;
  std::map<std::string, int> viewIds;
  int partials = 0;
  std::vector<std::pair<int, int>> partialOut; // (output, slot)
};
} // namespace tcc::fusedgen

#endif // TCC_COMPILER_CODEGEN_FUSEDCODEGENINTERNAL_H

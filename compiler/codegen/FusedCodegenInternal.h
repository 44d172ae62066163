//===- FusedCodegenInternal.h - Shared by the fused code generator --------===//
#ifndef TCC_COMPILER_CODEGEN_FUSEDCODEGENINTERNAL_H
#define TCC_COMPILER_CODEGEN_FUSEDCODEGENINTERNAL_H

#include "dialects/tcc/TccOps.h"
#include "passes/FusionModel.h"
#include "runtime/core/Artifact.h"

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
/// The same for the CUDA C of `tcc compile --target cuda` (CudaPrelude.cpp).
const char *cudaPrelude();
} // namespace tcc

// The per-region generator: FusedCodegen.cpp builds its node graph from the
// region's ops, FusedEmit.cpp writes it as C++ for the host library and
// CudaEmit.cpp as CUDA C; both emitters read the same KernelGraph.
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

/// One region's analysed node graph (KernelGen::analyze): nodes in a
/// topological order (every node after its arguments), each with its time
/// slot, where stored vectors live and which nodes the results are.
struct KernelGraph {
  FusedOp op;
  int index = 0;
  Domain d;
  std::vector<Node> nodes;
  std::vector<ViewVar> views; // row offsets of general broadcast views
  int partials = 0;           // per-row partials (losses)
  std::vector<std::pair<int, int>> partialOut; // (output, slot)
  std::vector<std::pair<int, int>> rowStores;  // (node, output): row results
  int scratch = 0; // vectors stored in scratch rows (Node::scratch)
  int maxTime = 0;
  /// Whether a node needs a whole row at once (a reduction, a pick or a
  /// per-row partial); else every element is independent of the others.
  bool hasRowNodes() const;
};

/// The profile name of a region: its distinct ops in order.
std::string regionName(FusedOp f);

class KernelGen : public KernelGraph {
public:
  KernelGen(FusedOp f, int i) {
    op = f;
    index = i;
  }
  /// Builds the graph: lowers every op, binds the results and decides which
  /// vectors live in memory. Emits an error on a region it cannot generate.
  LogicalResult analyze();
  /// analyze(), then the C++ of the host library and its meta
  /// (runtime/cpu/FusedLibrary.h).
  LogicalResult run(std::string &code, std::vector<int64_t> &meta);

private:
  void emitCpp(std::string &code, std::vector<int64_t> &meta);
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

  DenseMap<Value, int> valueNode;
  std::map<std::string, int> cse;
  std::map<std::string, int> viewIds;
};

/// The CUDA C of one analysed region (CudaEmit.cpp): `tcc_fused_K` and, with
/// partials, `tcc_fused_K_fin` (ABI: runtime/core/Artifact.h, above
/// DeviceKernel), and the kernel's entry of the launch table.
LogicalResult emitCudaKernel(const KernelGraph &g, std::string &code,
                             ::tcc::rt::DeviceKernel &kernel);
} // namespace tcc::fusedgen

#endif // TCC_COMPILER_CODEGEN_FUSEDCODEGENINTERNAL_H

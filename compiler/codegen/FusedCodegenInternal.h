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
/// ColSum: a vector's sum over all rows (a Layout::Column output), per
/// column: each row adds its value (`tmpl` over the args) to its row
/// slice's partial sums, which the fin adds in slice order
/// (KernelGraph::sliceRows). The host computes `tmpl` over the args
/// widened to double (as the library's kernel), the GPU in float, each
/// warp's rows of a slice in float and the rest in double.
enum class NodeKind { Load, Const, Expr, Reduce, Pick, Partial, ColSum };

/// The 16-bit float a value is stored as. Code computes in f32: a Load of a
/// bf16/f16 input converts each word up (exact); an Expr whose MLIR type is
/// bf16/f16 rounds its f32 result to nearest-even right where it is computed
/// (the word `h<N>` is stored, the exact f32 value `v<N>` is used), which is
/// where an unfused kernel would store it (runtime/cpu/KernelsHalf.cpp).
enum class Half { None, BF16, F16 };

/// Half::None for f32 (and integers), else the 16-bit type of `elem`.
inline Half halfOf(Type elem) {
  return elem.isBF16() ? Half::BF16 : elem.isF16() ? Half::F16 : Half::None;
}
/// The preludes' conversions: `tcc_bf16_to_f32(uint16)`, `tcc_f32_to_f16(f)`.
inline std::string widenFn(Half h) {
  return h == Half::BF16 ? "tcc_bf16_to_f32" : "tcc_f16_to_f32";
}
inline std::string narrowFn(Half h) {
  return h == Half::BF16 ? "tcc_f32_to_bf16" : "tcc_f32_to_f16";
}

struct Node {
  NodeKind kind;
  bool vec = false, isInt = false;
  Half half = Half::None; // Load: the input's words; Expr: rounded result
  int time = 0;
  std::string tmpl; // Expr/Partial: template; Const: literal; Reduce: sum|max
  SmallVector<int> args;
  int input = -1, view = -1; // Load
  /// Load: row r of the input starts at element r * rowScale (0: every row
  /// is the same one); -1 for other views.
  int64_t rowScale = -1;
  /// A Load of labels: checked to be classes, except `ignoreLabel` (the
  /// loss's ignore_index), for which the emitters define `tcc_ign<N>`
  /// (true on such a row) and make the value 0 so that picks stay in the
  /// row.
  bool checkLabel = false;
  int64_t ignoreLabel = -100;
  bool stored = false;
  int scratch = -1, output = -1; // where a stored vector lives
  int colSum = -1;               // ColSum: its slot among the column sums
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

/// A double literal that reads back as `v` exactly.
inline std::string doubleLiteral(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return "(" + s + ")";
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
  /// Column sums (ColSum nodes) and their (output, slot). Rows are summed
  /// in slices of `sliceRows` (the last may be shorter), fixed by the
  /// shape: slice s's partial sums are doubles at colBase() + (s *
  /// colSums + slot) * cols of the partials, each in row order, and the
  /// fin adds the slices in order, so the sums do not depend on how rows
  /// are split across threads or blocks.
  int colSums = 0;
  std::vector<std::pair<int, int>> colOut;
  int64_t sliceRows = 0;
  int64_t slices() const { return rt::columnSumSlices(d.rows, sliceRows); }
  int64_t colBase() const { return d.rows * partials; }
  std::vector<std::pair<int, int>> rowStores;  // (node, output): row results
  /// Per output: the zero columns after each row (a last-axis pad,
  /// Layout::Padded), 0 for the others. Row r of output k is at
  /// r * outStride(k); columns [cols, cols + pad) are written as zeros.
  std::vector<int64_t> outPad;
  int64_t outStride(int k) const { return d.cols + outPad[k]; }
  int scratch = 0; // vectors stored in scratch rows (Node::scratch)
  int maxTime = 0;
  /// (output, input) pairs whose bytes may be one buffer (the op's
  /// `in_place`): both emitters read every element of the input before they
  /// write that element of the output (KernelGen::findInPlace), drop the
  /// no-alias qualifiers of the pair and store such outputs last in a loop.
  std::vector<std::pair<int, int>> inPlace;
  bool writesInPlace(int output) const {
    for (auto [o, i] : inPlace)
      if (o == output)
        return true;
    return false;
  }
  bool readsInPlace(int input) const {
    for (auto [o, i] : inPlace)
      if (i == input)
        return true;
    return false;
  }
  /// Whether a node needs a whole row at once (a reduction, a pick or a
  /// per-row partial); else every element is independent of the others.
  bool hasRowNodes() const;
  /// The most per-lane array entries a CUDA rows kernel keeps: wider rows
  /// keep none, and later slots recompute vectors from the inputs
  /// (CudaEmit.cpp).
  static constexpr int64_t kMaxLaneSlots = 64;
  bool cudaRecomputes() const {
    return hasRowNodes() && (d.cols + 31) / 32 > kMaxLaneSlots;
  }
};

/// Element-wise ops' templates (FusedTemplates.cpp): `$0`.. are operands;
/// "" for an op that is not element-wise.
std::string elementwiseTemplate(Operation *o);
/// x^e with the special cases of runtime/cpu/KernelsMath.cpp's powScalar.
std::string powTemplate(double e, const std::string &x);
/// A template with libm's exp/erf/tanh (tcc_libm_*) for a 16-bit result.
std::string libmMath(std::string t);
/// A bf16/f16 splat constant as a C++ float expression.
std::string halfLiteral(const APFloat &v, Half h);

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
  /// (runtime/core/abi/FusedAbi.h).
  LogicalResult run(std::string &code, std::vector<int64_t> &meta);

private:
  void emitCpp(std::string &code, std::vector<int64_t> &meta);
  LogicalResult lower(Operation *o);
  void findInPlace();
  bool inPlaceSafe(int output, int input) const;
  FailureOr<int> use(Operation *o, unsigned i);
  int add(Node n);
  int expr(StringRef tmpl, ArrayRef<int> args, bool vec,
           Half half = Half::None);
  /// `arg` as a vector of floats in memory or registers (a bf16/f16 input
  /// is first converted), for reductions and picks that read whole rows.
  int asF32Row(int arg);
  int reduce(StringRef kind, int arg);
  /// A column sum of `tmpl` over vector args, into slot colSums.
  int colSum(StringRef tmpl, ArrayRef<int> args);
  int pick(int vecArg, int idx);
  int avail(int n) const { return nodes[n].time; }
  std::string ref(int n, int loopTime, StringRef j) const;
  /// Vectors read from memory in the loop being emitted, loaded once at its
  /// top: unconditional loads, so selects never become masked loads (GCC 12
  /// miscompiles some AVX2 masked loads).
  std::set<int> loopLocals;
  std::string ptr(int n) const;
  std::string subst(const Node &n, int loopTime, StringRef j) const;
  /// `const float v<N> = <value>;` (with the word h<N> for a 16-bit node).
  std::string define(int n, const std::string &value) const;
  /// What output `k` of node `n` stores: v<N>, or the word h<N>.
  std::string stored(int n) const;
  std::string viewOffset(int input, const View &v);

  DenseMap<Value, int> valueNode;
  std::map<std::string, int> cse;
  std::map<std::string, int> viewIds;
};

/// The CUDA C of one analysed region (CudaEmit.cpp): `tcc_fused_K` and, with
/// partials, `tcc_fused_K_fin` (ABI: runtime/core/Artifact.h, above
/// DeviceKernel), and the kernel's entry of the launch table. `arch` is the
/// target's compute capability (90 for sm_90a; 0 when the code must run on
/// any): from 90 a block_rows kernel may double-buffer its rows.
LogicalResult emitCudaKernel(const KernelGraph &g, int arch, std::string &code,
                             ::tcc::rt::DeviceKernel &kernel);
} // namespace tcc::fusedgen

#endif // TCC_COMPILER_CODEGEN_FUSEDCODEGENINTERNAL_H

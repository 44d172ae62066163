//===- OnnxInitializerRoles.cpp - Parameters, state, constants -----------===//
//
// The graph rule follows values forward from each float initializer. A use
// at a non-differentiable input stops the walk; a use by a node whose
// inputs are all constants (a Slice of a mask buffer, a Sqrt of a scale)
// continues from that node's outputs, since the gradient would reach the
// initializer through them; any other use, or reaching a graph output,
// makes it a parameter. Two more signs of a constant need no graph: rank 0
// (an eps or a scale) and infinities (an additive mask). A third is the
// exporter's word: PyTorch's dynamo exporter records torch.export's graph
// signature in value_info metadata, and a buffer (a rotary inv_freq) is
// not a parameter however the graph uses it.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxInitializerRoles.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/GlobPattern.h"

#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <optional>

using namespace mlir::tcc;

namespace {
/// Inputs that carry no gradient, by op_type; kAll: every input.
constexpr uint32_t kAll = ~0u;
struct NonDiff {
  const char *opType;
  uint32_t inputs; // bit i: input i
};
constexpr uint32_t bits(std::initializer_list<int> is) {
  uint32_t m = 0;
  for (int i : is)
    m |= 1u << i;
  return m;
}
const NonDiff kNonDiff[] = {
    // Shapes, axes, sizes, repeats.
    {"Reshape", bits({1})},
    {"Expand", bits({1})},
    {"Tile", bits({1})},
    {"Unsqueeze", bits({1})},
    {"Squeeze", bits({1})},
    {"Split", bits({1})},
    {"Slice", bits({1, 2, 3, 4})},
    {"Pad", bits({1, 2, 3})},
    {"Resize", bits({1, 2, 3})},
    {"Upsample", bits({1})},
    {"TopK", bits({1})},
    {"CumSum", bits({1})},
    {"Trilu", bits({1})},
    {"CastLike", bits({1})},
    {"ReduceSum", bits({1})},
    {"ReduceMean", bits({1})},
    {"ReduceMax", bits({1})},
    {"ReduceMin", bits({1})},
    {"ReduceProd", bits({1})},
    {"ReduceL1", bits({1})},
    {"ReduceL2", bits({1})},
    {"ReduceLogSumExp", bits({1})},
    {"ReduceSumSquare", bits({1})},
    // Indices, conditions, exponents, bounds, ratios, targets.
    {"Gather", bits({1})},
    {"GatherElements", bits({1})},
    {"GatherND", bits({1})},
    {"ScatterElements", bits({1})},
    {"ScatterND", bits({1})},
    {"Where", bits({0})},
    {"Pow", bits({1})},
    {"Clip", bits({1, 2})},
    {"Dropout", bits({1, 2})},
    {"NegativeLogLikelihoodLoss", bits({1, 2})},
    {"SoftmaxCrossEntropyLoss", bits({1, 2})},
    // Running statistics: state in training mode, read-only otherwise.
    {"BatchNormalization", bits({3, 4})},
    // Integer, bool or piecewise-constant results.
    {"Shape", kAll},
    {"Size", kAll},
    {"Range", kAll},
    {"ConstantOfShape", kAll},
    {"OneHot", kAll},
    {"NonZero", kAll},
    {"ArgMax", kAll},
    {"ArgMin", kAll},
    {"Equal", kAll},
    {"Less", kAll},
    {"LessOrEqual", kAll},
    {"Greater", kAll},
    {"GreaterOrEqual", kAll},
    {"And", kAll},
    {"Or", kAll},
    {"Xor", kAll},
    {"Not", kAll},
    {"IsNaN", kAll},
    {"IsInf", kAll},
    {"Sign", kAll},
    {"Floor", kAll},
    {"Ceil", kAll},
    {"Round", kAll},
};

/// Whether a float32 initializer holds an infinity or a NaN: a weight
/// never does (one update would make it NaN), an additive mask does.
bool holdsNonFinite(const onnx::TensorProto &t) {
  if (t.has_raw_data()) {
    const std::string &raw = t.raw_data();
    for (size_t i = 0; i + 4 <= raw.size(); i += 4) {
      float v;
      std::memcpy(&v, raw.data() + i, 4);
      if (!std::isfinite(v))
        return true;
    }
    return false;
  }
  for (float v : t.float_data())
    if (!std::isfinite(v))
      return true;
  return false;
}

/// The key under which the dynamo exporter stores an input's kind
/// (PARAMETER, BUFFER, USER_INPUT, ...) from torch.export's graph signature.
constexpr const char *kTorchInputKind =
    "pkg.torch.export.graph_signature.InputSpec.kind";

/// Names of the values whose metadata calls them buffers. The metadata is
/// ValueInfoProto field 4 (metadata_props, ONNX 1.16); it is read from the
/// wire so that builds against older onnx headers, which keep it as an
/// unknown field, see it too.
llvm::StringSet<> exportedBuffers(const onnx::GraphProto &g) {
  llvm::StringSet<> buffers;
  auto scan = [&](const onnx::ValueInfoProto &v) {
    google::protobuf::UnknownFieldSet fields;
    if (!fields.ParseFromString(v.SerializeAsString()))
      return;
    for (int i = 0; i < fields.field_count(); ++i) {
      const google::protobuf::UnknownField &f = fields.field(i);
      if (f.number() != 4 ||
          f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
        continue;
      onnx::StringStringEntryProto entry;
      if (entry.ParseFromString(f.length_delimited()) &&
          entry.key() == kTorchInputKind && entry.value() == "BUFFER")
        buffers.insert(v.name());
    }
  };
  for (const onnx::ValueInfoProto &v : g.value_info())
    scan(v);
  for (const onnx::ValueInfoProto &v : g.input())
    scan(v);
  return buffers;
}

bool isFloatType(int64_t t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::DOUBLE ||
         t == onnx::TensorProto::FLOAT16 || t == onnx::TensorProto::BFLOAT16;
}
} // namespace

bool mlir::tcc::isNonDifferentiableInput(const onnx::NodeProto &node,
                                         int index) {
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return false;
  // A cast to an integer or bool type ends every gradient.
  if (node.op_type() == "Cast") {
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.name() == "to" && a.type() == onnx::AttributeProto::INT)
        return !isFloatType(a.i());
    return false;
  }
  static const llvm::StringMap<uint32_t> table = [] {
    llvm::StringMap<uint32_t> m;
    for (const NonDiff &e : kNonDiff)
      m[e.opType] = e.inputs;
    return m;
  }();
  auto it = table.find(node.op_type());
  return it != table.end() && index < 32 && (it->second >> index & 1);
}

namespace {
std::string nodeLabel(const onnx::NodeProto &n, size_t index) {
  return n.op_type() + " '" +
         (n.name().empty() ? n.op_type() + "#" + std::to_string(index)
                           : n.name()) +
         "'";
}

/// Where a value goes, and whether it can carry a gradient there.
class GradientReach {
public:
  explicit GradientReach(const onnx::GraphProto &g) : g_(g) {
    for (const onnx::TensorProto &t : g.initializer())
      constant_.insert(t.name());
    for (const onnx::ValueInfoProto &o : g.output())
      outputs_.insert(o.name());
    for (auto [i, n] : llvm::enumerate(g.node())) {
      bool allConstant = true;
      for (auto [k, in] : llvm::enumerate(n.input())) {
        if (in.empty())
          continue;
        uses_[in].push_back({(unsigned)i, (int)k});
        allConstant &= constant_.contains(in);
      }
      // Nodes are in topological order: their inputs' constness is known.
      // Random ops are not constants, whatever their inputs.
      bool random = llvm::StringRef(n.op_type()).starts_with("Random") ||
                    n.op_type() == "Bernoulli" || n.op_type() == "Dropout";
      constantNode_.push_back(allConstant && !random);
      if (allConstant && !random)
        for (const std::string &out : n.output())
          constant_.insert(out);
    }
  }

  /// Whether `value` reaches an output differentiably; when it does not,
  /// `stop` names one non-differentiable use it reaches (empty: unused).
  bool reaches(const std::string &value, std::string &stop) {
    if (auto it = memo_.find(value); it != memo_.end()) {
      if (stop.empty())
        stop = it->second.second;
      return it->second.first;
    }
    memo_[value] = {false, ""}; // cycles cannot occur in a valid graph
    bool result = outputs_.contains(value);
    std::string first;
    for (auto [node, input] : uses_.lookup(value)) {
      if (result)
        break;
      const onnx::NodeProto &n = g_.node(node);
      if (isNonDifferentiableInput(n, input)) {
        if (first.empty())
          first =
              "input " + std::to_string(input) + " of " + nodeLabel(n, node);
        continue;
      }
      if (!constantNode_[node]) {
        result = true;
        break;
      }
      for (const std::string &out : n.output())
        if (!out.empty() && reaches(out, first)) {
          result = true;
          break;
        }
    }
    memo_[value] = {result, first};
    if (stop.empty())
      stop = first;
    return result;
  }

private:
  const onnx::GraphProto &g_;
  llvm::StringSet<> constant_, outputs_;
  llvm::StringMap<std::vector<std::pair<unsigned, int>>> uses_;
  std::vector<bool> constantNode_;
  llvm::StringMap<std::pair<bool, std::string>> memo_;
};

/// Compiled patterns with the flag that names them.
struct Patterns {
  const char *flag;
  std::vector<std::pair<std::string, llvm::GlobPattern>> list;
  std::vector<bool> used;

  bool compile(const std::vector<std::string> &pats, std::string &error) {
    for (const std::string &p : pats) {
      llvm::Expected<llvm::GlobPattern> g = llvm::GlobPattern::create(p);
      if (!g) {
        error = std::string(flag) + " '" + p +
                "' is not a valid pattern: " + llvm::toString(g.takeError());
        return false;
      }
      list.push_back({p, std::move(*g)});
    }
    used.assign(list.size(), false);
    return true;
  }
  /// The first pattern matching `name`.
  std::optional<std::string> match(llvm::StringRef name) {
    std::optional<std::string> first;
    for (auto [i, p] : llvm::enumerate(list))
      if (p.second.match(name)) {
        used[i] = true;
        if (!first)
          first = p.first;
      }
    return first;
  }
  bool checkAllUsed(std::string &error) const {
    for (auto [i, p] : llvm::enumerate(list)) {
      if (used[i])
        continue;
      bool glob = p.first.find_first_of("*?[\\") != std::string::npos;
      // The plain-name wording predates patterns; scripts may match it.
      error = std::string("cannot ") + (flag[2] == 'f' ? "freeze" : "train") +
              " '" + p.first + "': " +
              (glob ? "no initializer of the model matches it"
                    : "the model has no initializer by that name");
      return false;
    }
    return true;
  }
};

std::string patternWhy(const char *flag, const std::string &pattern) {
  return std::string(flag) + " '" + pattern + "'";
}
} // namespace

bool mlir::tcc::assignInitializerRoles(
    const onnx::GraphProto &g, const llvm::StringSet<> &state,
    const std::vector<std::string> &freeze,
    const std::vector<std::string> &trainable,
    std::vector<OnnxInitializerRole> &roles, std::string &error) {
  Patterns frozen{"--freeze", {}, {}}, train{"--trainable", {}, {}};
  if (!frozen.compile(freeze, error) || !train.compile(trainable, error))
    return false;
  GradientReach reach(g);
  llvm::StringSet<> buffers = exportedBuffers(g);
  roles.clear();
  for (const onnx::TensorProto &t : g.initializer()) {
    OnnxInitializerRole r;
    r.name = t.name();
    r.shape.assign(t.dims().begin(), t.dims().end());
    r.dataType = t.data_type();
    // Both lists are matched against every name, so that a pattern that
    // matches only non-float initializers still counts as used.
    std::optional<std::string> f = frozen.match(t.name());
    std::optional<std::string> tr = train.match(t.name());
    std::string stop;
    if (t.data_type() != onnx::TensorProto::FLOAT) {
      r.kind = OnnxInitializerRole::Constant;
      r.why = "not float32";
    } else if (f) {
      r.kind = OnnxInitializerRole::Constant;
      r.why = patternWhy("--freeze", *f);
    } else if (state.contains(t.name())) {
      r.kind = OnnxInitializerRole::State;
      r.why = "running statistics";
    } else if (tr) {
      r.kind = OnnxInitializerRole::Param;
      r.why = patternWhy("--trainable", *tr);
    } else if (!trainable.empty()) {
      r.kind = OnnxInitializerRole::Constant;
      r.why = "no --trainable pattern matches it";
    } else if (buffers.contains(t.name())) {
      r.kind = OnnxInitializerRole::Constant;
      r.why = std::string("a buffer, not a parameter, in the exporter's "
                          "graph signature (") +
              kTorchInputKind + ")";
    } else if (holdsNonFinite(t)) {
      r.kind = OnnxInitializerRole::Constant;
      r.why = "holds infinities or NaNs (an additive mask)";
    } else if (t.dims_size() == 0) {
      r.kind = OnnxInitializerRole::Constant;
      r.why = "a rank-0 scalar (an eps, a scale or an exponent)";
    } else if (!reach.reaches(t.name(), stop)) {
      r.kind = OnnxInitializerRole::Constant;
      r.why = stop.empty()
                  ? "unused"
                  : "reaches only non-differentiable inputs (" + stop + ")";
    } else {
      r.kind = OnnxInitializerRole::Param;
      r.why = "trained";
    }
    roles.push_back(std::move(r));
  }
  return frozen.checkAllUsed(error) && train.checkAllUsed(error);
}

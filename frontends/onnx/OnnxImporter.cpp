//===- OnnxImporter.cpp - ONNX model -> func.func @forward ----------------===//
//
// Stages: read the file (binary protobuf or ONNX text), resolve the default
// opset, turn initializers into parameters or constants and graph inputs into
// statically shaped arguments (the batch dimension fixed here), import nodes
// in graph order through the op table, return the graph outputs.
//
// Invariants: nodes are in topological order (the ONNX spec requires it), so
// every use follows its definition in the one block; integer and bool
// tensors stay import-time constants (shape arithmetic folds) unless they
// derive from an INT64 graph input or feed an op that runs (gather indices,
// masks), which materializes them.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxImporter.h"
#include "frontends/onnx/OnnxExternalData.h"
#include "frontends/onnx/OnnxGraph.h"
#include "frontends/onnx/OnnxInitializerRoles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/defs/parser.h>

#include <exception>

using namespace mlir;
using namespace mlir::tcc;

/// The version imported for `domain`, or 0; "" and "ai.onnx" are one domain.
static int64_t opsetFor(const onnx::ModelProto &model, StringRef domain) {
  auto isDefault = [](StringRef d) { return d.empty() || d == "ai.onnx"; };
  for (const onnx::OperatorSetIdProto &o : model.opset_import())
    if (o.domain() == domain || (isDefault(o.domain()) && isDefault(domain)))
      return o.version();
  return 0;
}

static std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s;
}

namespace {
/// Imports one model into a fresh module.
class ModelImporter {
public:
  ModelImporter(MLIRContext *ctx, const onnx::ModelProto &model,
                const OnnxImportOptions &opts, StringRef sourceName)
      : ctx(ctx), model(model), opts(opts), graph(ctx, sourceName) {}

  FailureOr<OwningOpRef<ModuleOp>> run();
  const OnnxImportStatus &status() const { return graph.status(); }
  /// Every initializer's role, once run() succeeded.
  std::vector<OnnxInitializerRole> takeRoles() { return std::move(roles_); }

private:
  LogicalResult importNode(const onnx::NodeProto &node, int index);
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &input,
                                        Type &declared);
  /// Says once per model that float64 is computed in float32.
  void warnDouble(Location loc);
  LogicalResult importOutputs(func::FuncOp func);

  MLIRContext *ctx;
  const onnx::ModelProto &model;
  const OnnxImportOptions &opts;
  GraphState graph;
  std::vector<OnnxInitializerRole> roles_;
  int64_t defaultOpset = 0;
  /// The batch size in effect: --batch, or the first input's first dim.
  int64_t batch = -1;
};
} // namespace

// Only the first dimension may be symbolic, and only when a batch size is
// known: tcc compiles for one static shape.
void ModelImporter::warnDouble(Location loc) { warnFloat64(graph, loc); }

/// The host type tcc.host_dtype names for an ONNX element type that runs
/// as another (DOUBLE as f32, INT32 as i64...), or "" when it runs as
/// itself.
static StringRef hostDTypeName(int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::DOUBLE:
    return "f64";
  case onnx::TensorProto::FLOAT16:
    return "f16";
  case onnx::TensorProto::BFLOAT16:
    return "bf16";
  case onnx::TensorProto::INT8:
    return "i8";
  case onnx::TensorProto::INT16:
    return "i16";
  case onnx::TensorProto::INT32:
    return "i32";
  case onnx::TensorProto::UINT8:
    return "u8";
  case onnx::TensorProto::UINT16:
    return "u16";
  case onnx::TensorProto::UINT32:
    return "u32";
  case onnx::TensorProto::UINT64:
    return "u64";
  default:
    return "";
  }
}

/// The host type of a narrow integer constant's type (ui8: "u8").
static StringRef narrowHostDType(Type et) {
  static const char *const kSigned[] = {"i8", "i16", "i32"};
  static const char *const kUnsigned[] = {"u8", "u16", "u32", "u64"};
  unsigned w = et.getIntOrFloatBitWidth();
  unsigned k = w == 8 ? 0 : w == 16 ? 1 : w == 32 ? 2 : 3;
  return et.isUnsignedInteger() ? kUnsigned[k] : kSigned[std::min(k, 2u)];
}

/// The float type an f32 stands for (f16, bf16, f64), for CastLike.
static Type declaredFloat(MLIRContext *ctx, int32_t dataType) {
  switch (dataType) {
  case onnx::TensorProto::DOUBLE:
    return Float64Type::get(ctx);
  case onnx::TensorProto::FLOAT16:
    return Float16Type::get(ctx);
  case onnx::TensorProto::BFLOAT16:
    return BFloat16Type::get(ctx);
  default:
    return {};
  }
}

FailureOr<RankedTensorType>
ModelImporter::inputType(const onnx::ValueInfoProto &input, Type &declared) {
  Location loc = graph.nameLoc(input.name());
  const std::string &name = input.name();
  if (!input.type().has_tensor_type())
    return graph.emitUnsupported(loc, "non-tensor input")
           << "input '" << name << "' is not a tensor";
  const onnx::TypeProto::Tensor &t = input.type().tensor_type();
  // INT64 inputs are indices (token ids): they feed Gather, Equal, Cast...
  // BOOL inputs (masks) are i1, fed as i64 0/1 like every run-time bool.
  // Other integer types run as i64 (what they may feed: see
  // OnnxDeclaredTypes.cpp), float types as f32 (DOUBLE rounded, FLOAT16
  // and BFLOAT16 exactly); the host converts at the boundary.
  Type onnxType = onnxElementType(ctx, t.elem_type());
  if (!onnxType)
    return graph.emitUnsupported(loc,
                                 "input dtype " + onnxTypeName(t.elem_type()))
           << "input '" << name << "' has element type "
           << onnxTypeName(t.elem_type())
           << "; supported graph input types: " << kSupportedOnnxTypes;
  bool isInt64 = isa<IntegerType>(onnxType) && !onnxType.isInteger(1);
  bool isBool = onnxType.isInteger(1);
  declared =
      isNarrowInt(onnxType) ? onnxType : declaredFloat(ctx, t.elem_type());
  if (t.elem_type() == onnx::TensorProto::DOUBLE)
    warnDouble(loc);
  if (!t.has_shape())
    return emitError(loc) << "input '" << name
                          << "' has no shape (unknown rank); tcc needs static "
                             "shapes";
  SmallVector<int64_t> shape;
  for (auto [axis, dim] : llvm::enumerate(t.shape().dim())) {
    std::string symbol = dim.has_dim_param() ? dim.dim_param() : "?";
    bool isStatic = dim.has_dim_value() && dim.dim_value() >= 0;
    if (axis == 0) {
      if (isStatic && batch > 0 && opts.batch > 0 && dim.dim_value() != batch)
        return emitError(loc)
               << "input '" << name << "' has a static batch dimension of "
               << dim.dim_value() << ", which disagrees with --batch "
               << opts.batch;
      if (!isStatic && batch <= 0)
        return emitError(loc)
               << "input '" << name << "' has a dynamic batch dimension '"
               << symbol << "'; pass --batch";
      if (batch <= 0)
        batch = dim.dim_value();
      shape.push_back(isStatic ? dim.dim_value() : batch);
      continue;
    }
    if (!isStatic)
      return emitError(loc) << "input '" << name << "' has dynamic dimension '"
                            << symbol << "' at axis " << axis
                            << "; only the first (batch) dimension can be "
                               "fixed, by --batch";
    shape.push_back(dim.dim_value());
  }
  Type element = isInt64  ? Type(IntegerType::get(ctx, 64))
                 : isBool ? Type(IntegerType::get(ctx, 1))
                          : Type(Float32Type::get(ctx));
  return RankedTensorType::get(shape, element);
}

LogicalResult ModelImporter::importNode(const onnx::NodeProto &node,
                                        int index) {
  std::string name = node.name().empty()
                         ? node.op_type() + "#" + std::to_string(index)
                         : node.name();
  bool isDefault = node.domain().empty() || node.domain() == "ai.onnx";
  int64_t opset = isDefault ? defaultOpset : opsetFor(model, node.domain());
  const OnnxOpEntry *entry =
      isDefault ? findOnnxOp(node.op_type(), opset) : nullptr;
  if (!entry) {
    // The op's name alone when no opset of it is supported, else op@opset.
    std::string feature =
        isDefault ? node.op_type() : node.domain() + "." + node.op_type();
    if (isDefault && llvm::any_of(onnxOpTable(), [&](const OnnxOpEntry &e) {
          return node.op_type() == e.opType;
        }))
      feature += "@" + std::to_string(opset);
    InFlightDiagnostic diag =
        graph.emitUnsupported(graph.nameLoc(name), feature);
    diag << "node '" << name << "' (op_type '" << node.op_type() << "', ";
    if (!isDefault)
      diag << "domain '" << node.domain() << "', ";
    diag << "opset " << opset << ") is not supported";
    if (isDefault) {
      // Say so when only the opset is the problem; adjacent rows (Dropout's
      // two) read as one range.
      SmallVector<std::pair<int64_t, int64_t>> ranges;
      for (const OnnxOpEntry &e : onnxOpTable()) {
        if (node.op_type() != e.opType)
          continue;
        if (!ranges.empty() && ranges.back().second + 1 == e.minOpset)
          ranges.back().second = e.maxOpset;
        else
          ranges.push_back({e.minOpset, e.maxOpset});
      }
      for (auto [lo, hi] : ranges)
        diag << " (" << node.op_type() << " is supported at opsets " << lo
             << " to " << hi << ")";
    }
    return diag << "; supported ops: " << joined(supportedOnnxOps());
  }
  if (failed(checkDeclaredInputs(graph, node, name)))
    return failure();
  NodeImporter importer(graph, node, name, opset);
  if (failed(entry->build(importer)))
    return failure();
  propagateDeclared(graph, node);
  return success();
}

LogicalResult ModelImporter::importOutputs(func::FuncOp func) {
  SmallVector<Value> results;
  SmallVector<std::pair<size_t, StringRef>> hosts;
  for (const onnx::ValueInfoProto &out : model.graph().output()) {
    Location loc = graph.nameLoc(out.name());
    OnnxValue *v = graph.lookup(out.name());
    if (!v)
      return emitError(loc)
             << "graph output '" << out.name() << "' is never produced";
    if (v->sequence)
      return graph.emitUnsupported(loc, "sequence output")
             << "graph output '" << out.name()
             << "' is a sequence; only tensor outputs are supported";
    Type type = v->value ? v->value.getType() : v->constant.getType();
    auto tensor = cast<RankedTensorType>(type);
    // int64 (argmax, say) and bool (masks) outputs are forward results; the
    // loss builder insists that output 0, which it trains, is a float.
    // Declared types that run as others (DOUBLE as f32, INT32 as i64) are
    // recorded for the host to convert (tcc.host_dtype).
    Type et = declaredElementType(*v);
    int32_t declared = out.type().has_tensor_type()
                           ? out.type().tensor_type().elem_type()
                           : onnx::TensorProto::UNDEFINED;
    Type want = declared != onnx::TensorProto::UNDEFINED
                    ? onnxElementType(ctx, declared)
                    : Type();
    bool isFloat = isa<FloatType>(et), isInt = isa<IntegerType>(et);
    bool agrees = !want || (isa<FloatType>(want) ? isFloat
                            : want.isInteger(1)  ? et.isInteger(1)
                                                 : isInt && !et.isInteger(1));
    if (!agrees || (!isFloat && !isInt)) {
      std::string feature;
      llvm::raw_string_ostream os(feature);
      os << "output dtype " << et;
      return graph.emitUnsupported(loc, feature)
             << "graph output '" << out.name() << "' has type " << type
             << (want ? " but is declared " + onnxTypeName(declared) : "")
             << "; outputs are float, integer or bool tensors of their "
                "declared type";
    }
    StringRef host;
    if (want)
      host = hostDTypeName(declared);
    else if (isNarrowInt(et))
      host = narrowHostDType(et);
    if (declared == onnx::TensorProto::DOUBLE)
      warnDouble(loc);
    if (!host.empty())
      hosts.push_back({results.size(), host});
    // A declared static shape that differs from the computed one means the
    // importer and the exporter disagree about an op: better to stop here.
    // The first dimension is exempt: --batch may have changed it.
    if (out.type().has_tensor_type() && out.type().tensor_type().has_shape()) {
      const auto &dims = out.type().tensor_type().shape().dim();
      bool mismatch = (int64_t)dims.size() != tensor.getRank();
      for (int i = 0; !mismatch && i < dims.size(); ++i)
        mismatch = i > 0 && dims[i].has_dim_value() &&
                   dims[i].dim_value() != tensor.getDimSize(i);
      if (mismatch) {
        std::string declared = "[";
        for (int i = 0; i < dims.size(); ++i)
          declared +=
              (i ? "," : "") + (dims[i].has_dim_value()
                                    ? std::to_string(dims[i].dim_value())
                                    : std::string("?"));
        return emitError(loc)
               << "graph output '" << out.name() << "' is declared with shape "
               << declared << "] but the graph computes "
               << shapeStr(tensor.getShape());
      }
    }
    results.push_back(graph.materialize(*v));
  }
  // Then the new value of each running state an op updated (kind "update").
  size_t numOutputs = results.size();
  for (const auto &update : graph.stateUpdates())
    results.push_back(update.second);
  func::ReturnOp::create(graph.builder(), graph.fileLoc(), results);
  func.setType(FunctionType::get(ctx, func.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  for (auto [i, out] : llvm::enumerate(model.graph().output()))
    func.setResultAttr(i, "tcc.name", StringAttr::get(ctx, out.name()));
  for (auto [i, host] : hosts)
    func.setResultAttr(i, "tcc.host_dtype", StringAttr::get(ctx, host));
  for (auto [i, update] : llvm::enumerate(graph.stateUpdates())) {
    func.setResultAttr(numOutputs + i, "tcc.kind",
                       StringAttr::get(ctx, "update"));
    func.setResultAttr(numOutputs + i, "tcc.name",
                       StringAttr::get(ctx, update.first));
  }
  return success();
}

FailureOr<OwningOpRef<ModuleOp>> ModelImporter::run() {
  ctx->loadDialect<TccDialect, func::FuncDialect>();
  Location fileLoc = graph.fileLoc();
  if (opts.batch == 0 || opts.batch < -1)
    return emitError(fileLoc)
           << "the batch size must be positive, got " << opts.batch;
  batch = opts.batch;
  defaultOpset = opsetFor(model, "");
  if (defaultOpset <= 0) {
    // A model whose nodes are all of another domain (say
    // ai.onnx.preview.training) is valid; tcc just implements none of it.
    bool otherDomainsOnly =
        llvm::none_of(model.graph().node(), [](const onnx::NodeProto &n) {
          return n.domain().empty() || n.domain() == "ai.onnx";
        });
    for (const onnx::OperatorSetIdProto &o : model.opset_import())
      if (otherDomainsOnly && !o.domain().empty())
        return graph.emitUnsupported(fileLoc, "domain " + o.domain())
               << "the model imports no opset for the default ONNX domain, "
                  "only for '"
               << o.domain() << "', which tcc does not support";
    return emitError(fileLoc) << "the model imports no opset for the default "
                                 "ONNX domain (\"\" or \"ai.onnx\")";
  }
  // A newer opset may have changed any op's meaning: refuse it whole rather
  // than import nodes under rules they may no longer follow.
  if (defaultOpset > kNewestOnnxOpset)
    return graph.emitUnsupported(fileLoc,
                                 "opset " + std::to_string(defaultOpset))
           << "the model imports opset " << defaultOpset
           << " of the default ONNX domain; the newest tcc supports is "
           << kNewestOnnxOpset
           << " (export with opset_version <= " << kNewestOnnxOpset << ")";
  if (!model.has_graph())
    return emitError(fileLoc) << "the model has no graph";
  const onnx::GraphProto &g = model.graph();

  llvm::StringSet<> initializers;
  for (const onnx::TensorProto &t : g.initializer())
    if (!initializers.insert(t.name()).second)
      return emitError(graph.nameLoc(t.name()))
             << "initializer '" << t.name() << "' is defined twice";

  // Initializers that an op updates as running state (batch norm statistics)
  // are state, not trained, unless frozen.
  llvm::StringSet<> stateInputs;
  for (const onnx::NodeProto &node : g.node()) {
    bool isDefault = node.domain().empty() || node.domain() == "ai.onnx";
    const OnnxOpEntry *entry =
        isDefault ? findOnnxOp(node.op_type(), defaultOpset) : nullptr;
    if (!entry || !entry->stateInputs)
      continue;
    for (unsigned i : entry->stateInputs(node, defaultOpset, opts))
      if (i < (unsigned)node.input_size() &&
          initializers.contains(node.input(i)))
        stateInputs.insert(node.input(i));
  }
  std::vector<OnnxInitializerRole> roles;
  if (std::string error; !assignInitializerRoles(g, stateInputs, opts.frozen,
                                                 opts.trainable, roles, error))
    return emitError(fileLoc) << error;
  graph.setProducer(model.producer_name());
  graph.setBatchNormTrain(opts.batchNormTrain);
  for (const OnnxInitializerRole &r : roles)
    if (r.kind == OnnxInitializerRole::State)
      graph.markState(r.name);

  // Arguments: trainable parameters and state, then data inputs.
  struct Arg {
    std::string name;
    const char *kind;
    RankedTensorType type;
    Type declared = {};
    StringRef host = {};
  };
  SmallVector<Arg> args;
  for (auto [t, role] : llvm::zip_equal(g.initializer(), roles)) {
    Location loc = graph.nameLoc(t.name());
    std::string what = "initializer '" + t.name() + "'";
    // importOnnxFile and the compiler's reader load external data; a model
    // handed over in memory must come with it loaded.
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      return emitError(loc) << what
                            << " keeps its data in an external file, which "
                               "was not loaded (import the model from its "
                               "file)";
    if (role.kind != OnnxInitializerRole::Constant) {
      FailureOr<RankedTensorType> type = tensorType(t, what, loc);
      if (failed(type))
        return failure();
      args.push_back(
          {t.name(),
           role.kind == OnnxInitializerRole::State ? "state" : "param", *type});
      continue;
    }
    if (!onnxElementType(ctx, t.data_type()))
      return graph.emitUnsupported(loc, "initializer dtype " +
                                            onnxTypeName(t.data_type()))
             << what << " has element type " << onnxTypeName(t.data_type())
             << ", which the importer does not support (supported: "
             << kSupportedOnnxTypes << ")";
    if (t.data_type() == onnx::TensorProto::DOUBLE)
      warnDouble(loc);
    FailureOr<DenseElementsAttr> value = convertTensor(t, what, loc);
    if (failed(value))
      return failure();
    graph.define(t.name(), OnnxValue{{}, *value, loc});
  }
  roles_ = std::move(roles);
  for (const onnx::ValueInfoProto &in : g.input()) {
    // Before IR version 4 initializers were listed as inputs too.
    if (initializers.contains(in.name()))
      continue;
    Type declared;
    FailureOr<RankedTensorType> type = inputType(in, declared);
    if (failed(type))
      return failure();
    args.push_back({in.name(), "input", *type, declared,
                    hostDTypeName(in.type().tensor_type().elem_type())});
  }
  if (batch <= 0)
    batch = 1; // No input with a batch dimension: nothing depends on it.

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr("tcc.batch",
                     IntegerAttr::get(IntegerType::get(ctx, 64), batch));
  OpBuilder &b = graph.builder();
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<Type> argTypes;
  for (const Arg &a : args)
    argTypes.push_back(a.type);
  auto func = func::FuncOp::create(b, fileLoc, "forward",
                                   FunctionType::get(ctx, argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, a] : llvm::enumerate(args)) {
    func.setArgAttr(i, "tcc.kind", StringAttr::get(ctx, a.kind));
    func.setArgAttr(i, "tcc.name", StringAttr::get(ctx, a.name));
    if (!a.host.empty())
      func.setArgAttr(i, "tcc.host_dtype", StringAttr::get(ctx, a.host));
    BlockArgument arg = entry->getArgument(i);
    arg.setLoc(graph.nameLoc(a.name));
    graph.define(a.name, OnnxValue{arg, {}, {}, a.declared});
  }
  b.setInsertionPointToEnd(entry);

  for (auto [i, node] : llvm::enumerate(g.node()))
    if (failed(importNode(node, i)))
      return failure();
  if (failed(importOutputs(func)))
    return failure();
  if (failed(verify(*module)))
    return failure();
  return module;
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::tcc::importOnnxModel(MLIRContext *ctx, const onnx::ModelProto &model,
                           const OnnxImportOptions &opts, StringRef sourceName,
                           OnnxImportStatus *status) {
  ModelImporter importer(ctx, model, opts, sourceName);
  FailureOr<OwningOpRef<ModuleOp>> module = importer.run();
  if (status) {
    *status = failed(module) ? importer.status() : OnnxImportStatus();
    if (succeeded(module))
      status->initializers = importer.takeRoles();
  }
  return module;
}

FailureOr<OwningOpRef<ModuleOp>>
mlir::tcc::importOnnxFile(MLIRContext *ctx, StringRef path,
                          const OnnxImportOptions &opts,
                          OnnxImportStatus *status) {
  if (status)
    *status = OnnxImportStatus();
  Location loc = FileLineColLoc::get(ctx, path, 0, 0);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return emitError(loc) << "cannot read file: "
                          << buffer.getError().message();
  StringRef data = (*buffer)->getBuffer();
  onnx::ModelProto model;
  if (path.ends_with(".onnxtxt")) {
    // libonnx's parser throws on some malformed literals (std::stoll).
    std::string text = data.str(), error;
    try {
      onnx::Common::Status status =
          onnx::OnnxParser::Parse(model, text.c_str());
      if (!status.IsOK())
        error = status.ErrorMessage();
    } catch (const std::exception &e) {
      error = e.what();
    }
    if (!error.empty())
      return emitError(loc)
             << "not a valid ONNX text model: " << StringRef(error).rtrim();
  } else if (std::string error; !parseOnnxBytes(data, model, error)) {
    return emitError(loc) << error;
  }
  // External data is found relative to the model's folder.
  if (std::string error;
      !loadExternalData(model, llvm::sys::path::parent_path(path), error))
    return emitError(loc) << error;
  return importOnnxModel(ctx, model, opts, path, status);
}

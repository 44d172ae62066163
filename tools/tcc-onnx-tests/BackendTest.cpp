//===- BackendTest.cpp - One ONNX backend node test through tcc -----------===//
//
// model.onnx + test data -> (rules of BackendTest.h) -> importOnnxModel ->
// ScheduleBuilder::lower(@forward) -> Session (compiled, eager) -> compare.
// Only an importer failure it tags as unsupported makes a test unsupported;
// every other failure on the way is a failed test.
//
//===----------------------------------------------------------------------===//
#include "tools/tcc-onnx-tests/BackendTest.h"

#include "compiler/OnnxModelIO.h"
#include "compiler/codegen/ScheduleBuilder.h"
#include "dialects/tcc/TccDialect.h"
#include "frontends/onnx/OnnxImporter.h"
#include "runtime/cpu/CpuSession.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <filesystem>
#include <map>

using namespace tcc;
using namespace tcc::onnxtests;
namespace fs = std::filesystem;

bool onnxtests::discoverTests(const std::string &root,
                              const std::vector<std::string> &suites,
                              std::vector<BackendTest> &tests,
                              std::string &error) {
  for (const std::string &suite : suites) {
    fs::path dir = fs::path(root) / suite;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      error = dir.string() + ": not a directory (is libonnx-testdata "
                             "installed? pass --data)";
      return false;
    }
    for (const fs::directory_entry &e : fs::directory_iterator(dir, ec))
      if (fs::exists(e.path() / "model.onnx"))
        tests.push_back(
            {suite + "/" + e.path().filename().string(), e.path().string()});
    if (ec) {
      error = dir.string() + ": " + ec.message();
      return false;
    }
  }
  std::sort(
      tests.begin(), tests.end(),
      [](const BackendTest &a, const BackendTest &b) { return a.id < b.id; });
  return true;
}

/// input_0.pb, input_1.pb, ... (or output_*) of one data set, in order.
static bool readTensors(const fs::path &set, const std::string &prefix,
                        std::vector<onnx::TensorProto> &out,
                        std::string &error) {
  for (int i = 0;; ++i) {
    fs::path file = set / (prefix + "_" + std::to_string(i) + ".pb");
    if (!fs::exists(file))
      return true;
    out.emplace_back();
    if (!readTensorFile(file.string(), out.back(), error))
      return false;
  }
}

static onnx::TensorProto *findInitializer(onnx::GraphProto &g,
                                          const std::string &name) {
  for (onnx::TensorProto &t : *g.mutable_initializer())
    if (t.name() == name)
      return &t;
  return nullptr;
}

/// Whether graph input `name` is read where tcc needs a constant: a bound
/// (input 1 or 2) of a Clip, Resize's roi or scales (1, 2), Upsample's
/// scales (1), the condition of a Compress or the depth of a OneHot (which
/// fix the output's shape).
static bool readAsConstant(const onnx::GraphProto &g, const std::string &name) {
  for (const onnx::NodeProto &n : g.node()) {
    if (!n.domain().empty())
      continue;
    int last = n.op_type() == "Clip" || n.op_type() == "Resize" ? 2
               : n.op_type() == "Upsample"                      ? 1
                                                                : 0;
    for (int k = 1; k < n.input_size() && k <= last; ++k)
      if (n.input(k) == name)
        return true;
    if ((n.op_type() == "Compress" || n.op_type() == "OneHot") &&
        n.input_size() > 1 && n.input(1) == name)
      return true;
  }
  return false;
}

/// Applies the rules of BackendTest.h for one data set: integer inputs and
/// float ones read as constants become initializers (the float ones listed
/// in `frozen`), the other inputs take the data's shapes. input_i
/// belongs to graph.input[i], as in onnx.backend.test. Inputs that also are
/// initializers (IR < 4 lists those as inputs) take the data as their value.
static bool prepareModel(onnx::ModelProto &model,
                         const std::vector<onnx::TensorProto> &inputs,
                         std::vector<std::string> &frozen, std::string &error) {
  onnx::GraphProto &g = *model.mutable_graph();
  if ((int)inputs.size() > g.input_size()) {
    error = "the data set has " + std::to_string(inputs.size()) +
            " inputs, the graph " + std::to_string(g.input_size());
    return false;
  }
  std::vector<int> constant;
  for (int i = 0; i < (int)inputs.size(); ++i) {
    onnx::ValueInfoProto &info = *g.mutable_input(i);
    // Sequences, optionals, maps: the importer reports them unsupported.
    if (!info.type().has_tensor_type())
      continue;
    onnx::TensorProto value = inputs[i];
    value.set_name(info.name());
    int32_t dataType = value.data_type();
    onnx::TensorProto *init = findInitializer(g, info.name());
    bool isInteger = dataType == onnx::TensorProto::INT64 ||
                     dataType == onnx::TensorProto::INT32 ||
                     dataType == onnx::TensorProto::INT16 ||
                     dataType == onnx::TensorProto::INT8 ||
                     dataType == onnx::TensorProto::UINT64 ||
                     dataType == onnx::TensorProto::UINT32 ||
                     dataType == onnx::TensorProto::UINT16 ||
                     dataType == onnx::TensorProto::UINT8;
    if (isInteger) {
      *(init ? init : g.add_initializer()) = value;
      constant.push_back(i);
      continue;
    }
    if (readAsConstant(g, info.name())) {
      *(init ? init : g.add_initializer()) = value;
      frozen.push_back(info.name());
      constant.push_back(i);
      continue;
    }
    if (init) {
      *init = value;
      continue;
    }
    onnx::TensorShapeProto &shape =
        *info.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape.clear_dim();
    for (int64_t d : value.dims())
      shape.add_dim()->set_dim_value(d);
  }
  for (auto it = constant.rbegin(); it != constant.rend(); ++it)
    g.mutable_input()->DeleteSubrange(*it, 1);
  return true;
}

namespace {
/// Runs one data set; the test's outcome is that of its first data set that
/// does not pass.
class DataSetRun {
public:
  DataSetRun(const BackendTest &test, const fs::path &set,
             const RunOptions &opts, TestResult &result)
      : test(test), set(set), opts(opts), result(result) {}

  void run(const onnx::ModelProto &original);

private:
  void fail(const std::string &message) {
    result.outcome = Outcome::Failed;
    result.message = set.filename().string() + ": " + message;
  }
  bool lower(const onnx::ModelProto &model, rt::Artifact &artifact);
  bool execute(const rt::Artifact &artifact, rt::ExecMode mode,
               const std::map<std::string, HostTensor> &inputs,
               const std::vector<HostTensor> &expected);

  const BackendTest &test;
  fs::path set;
  const RunOptions &opts;
  TestResult &result;
  std::vector<std::string> frozen;
};
} // namespace

/// Import and lowering, with MLIR diagnostics collected into the result.
bool DataSetRun::lower(const onnx::ModelProto &model, rt::Artifact &artifact) {
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  ctx.loadDialect<mlir::tcc::TccDialect, mlir::func::FuncDialect>();
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    // The messages name the node or tensor; the runner names the test.
    llvm::raw_string_ostream os(result.diagnostics);
    os << (d.getSeverity() == mlir::DiagnosticSeverity::Error ? "error: " : "")
       << d.str() << "\n";
    for (mlir::Diagnostic &note : d.getNotes())
      os << "  note: " << note.str() << "\n";
    return mlir::success();
  });

  mlir::tcc::OnnxImportStatus status;
  std::string source = (fs::path(test.dir) / "model.onnx").string();
  mlir::tcc::OnnxImportOptions options;
  options.frozen = frozen;
  auto module =
      mlir::tcc::importOnnxModel(&ctx, model, options, source, &status);
  if (mlir::failed(module)) {
    if (status.unsupported) {
      result.outcome = Outcome::Unsupported;
      result.feature = status.feature;
    } else {
      fail("import failed");
    }
    return false;
  }

  std::map<std::string, std::vector<float>> params;
  for (const onnx::TensorProto &t : model.graph().initializer()) {
    if (t.data_type() != onnx::TensorProto::FLOAT)
      continue;
    std::string error;
    if (!initializerFloats(t, params[t.name()], error)) {
      fail(error);
      return false;
    }
  }
  auto forward = (*module)->lookupSymbol<mlir::func::FuncOp>("forward");
  if (!forward) {
    fail("the importer produced no @forward");
    return false;
  }
  ScheduleBuilder builder(artifact, params);
  if (mlir::failed(builder.lower(forward, "forward"))) {
    fail("lowering @forward failed");
    return false;
  }
  return true;
}

bool DataSetRun::execute(const rt::Artifact &artifact, rt::ExecMode mode,
                         const std::map<std::string, HostTensor> &inputs,
                         const std::vector<HostTensor> &expected) {
  std::string modeName = mode == rt::ExecMode::Compiled ? "compiled" : "eager";
  const rt::Program &prog = *artifact.findProgram("forward");
  if (prog.outputs.size() != expected.size()) {
    fail("@forward has " + std::to_string(prog.outputs.size()) +
         " outputs, the data set " + std::to_string(expected.size()));
    return false;
  }
  try {
    rt::cpu::CpuSession session(artifact, mode);
    for (int32_t id : prog.inputs) {
      const rt::TensorInfo &info = artifact.tensors[id];
      auto it = inputs.find(info.name);
      std::string error;
      if (it == inputs.end()) {
        fail("no test data for input '" + info.name + "'");
        return false;
      }
      if (!fillBuffer(info, session.data(id), it->second, error)) {
        fail(error);
        return false;
      }
    }
    session.run("forward");
    for (size_t k = 0; k < expected.size(); ++k) {
      int32_t id = prog.outputs[k];
      std::string diff = compareOutput(artifact.tensors[id], session.data(id),
                                       expected[k], opts.tolerance);
      if (!diff.empty()) {
        fail(modeName + ": output " + std::to_string(k) + " ('" +
             expected[k].name + "'): " + diff);
        result.mismatch = true;
        return false;
      }
    }
  } catch (const rt::Error &e) {
    fail(modeName + ": " + e.what());
    return false;
  }
  return true;
}

void DataSetRun::run(const onnx::ModelProto &original) {
  std::vector<onnx::TensorProto> inputs, outputs;
  std::string error;
  if (!readTensors(set, "input", inputs, error) ||
      !readTensors(set, "output", outputs, error))
    return fail(error);

  // ONNX's tests store BFLOAT16 data as UINT16 words (numpy has no
  // bfloat16): read them as the type the graph declares.
  auto relabel = [](onnx::TensorProto &t, const onnx::ValueInfoProto &info) {
    if (t.data_type() == onnx::TensorProto::UINT16 &&
        info.type().tensor_type().elem_type() == onnx::TensorProto::BFLOAT16)
      t.set_data_type(onnx::TensorProto::BFLOAT16);
  };
  for (size_t i = 0;
       i < inputs.size() && (int)i < original.graph().input_size(); ++i)
    relabel(inputs[i], original.graph().input(i));
  for (size_t k = 0;
       k < outputs.size() && (int)k < original.graph().output_size(); ++k)
    relabel(outputs[k], original.graph().output(k));

  onnx::ModelProto model = original;
  if (!prepareModel(model, inputs, frozen, error))
    return fail(error);
  rt::Artifact artifact;
  if (!lower(model, artifact))
    return;

  // Decoded only now: the data of an unsupported test may be of any type.
  std::map<std::string, HostTensor> data;
  for (const onnx::ValueInfoProto &in : model.graph().input()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (original.graph().input(i).name() != in.name())
        continue;
      HostTensor &t = data[in.name()];
      if (!decodeTensor(inputs[i], t, error))
        return fail("input " + std::to_string(i) + ": " + error);
    }
  }
  std::vector<HostTensor> expected(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (!decodeTensor(outputs[k], expected[k], error))
      return fail("output " + std::to_string(k) + ": " + error);
    if (expected[k].name.empty() && (int)k < model.graph().output_size())
      expected[k].name = model.graph().output(k).name();
  }
  // tcc computes DOUBLE in float32: data that float32 cannot hold is
  // outside what it supports, not a wrong answer.
  auto beyondF32 = [](const HostTensor &t) {
    return t.dataType == onnx::TensorProto::DOUBLE &&
           llvm::any_of(t.floats, [](double v) {
             return std::isfinite(v) && std::fabs(v) > FLT_MAX;
           });
  };
  bool beyond = llvm::any_of(expected, beyondF32);
  for (const auto &in : data)
    beyond |= beyondF32(in.second);
  if (beyond) {
    result.outcome = Outcome::Unsupported;
    result.feature = "DOUBLE values beyond float32";
    return;
  }
  if (opts.perturb)
    for (HostTensor &t : expected)
      if ((result.perturbed = perturb(t)))
        break;

  std::vector<rt::ExecMode> modes = {rt::ExecMode::Compiled};
  if (opts.eager)
    modes.push_back(rt::ExecMode::Eager);
  for (rt::ExecMode mode : modes)
    if (!execute(artifact, mode, data, expected))
      return;
}

/// Whether the graph draws random numbers: its outputs are numpy's draws,
/// which tcc's counter-based generator does not reproduce by design.
static bool drawsRandom(const onnx::ModelProto &model) {
  return llvm::any_of(model.graph().node(), [](const onnx::NodeProto &n) {
    llvm::StringRef op = n.op_type();
    return op.starts_with("RandomNormal") || op.starts_with("RandomUniform") ||
           op == "Bernoulli";
  });
}

TestResult onnxtests::runBackendTest(const BackendTest &test,
                                     const RunOptions &opts) {
  TestResult result;
  onnx::ModelProto model;
  std::string error;
  if (!readOnnxModel((fs::path(test.dir) / "model.onnx").string(), model,
                     error)) {
    result.outcome = Outcome::Failed;
    result.message = error;
    return result;
  }
  std::vector<fs::path> sets;
  for (const fs::directory_entry &e : fs::directory_iterator(test.dir))
    if (e.is_directory() &&
        e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) {
    result.outcome = Outcome::Failed;
    result.message = "no test_data_set_* directory";
    return result;
  }
  for (const fs::path &set : sets) {
    DataSetRun(test, set, opts, result).run(model);
    if (result.outcome != Outcome::Passed)
      break;
  }
  // A random graph that imported, ran and gave outputs of the expected types
  // and shapes cannot be compared further: its values are not numpy's.
  if (result.outcome == Outcome::Failed && result.mismatch &&
      drawsRandom(model) &&
      result.message.find("): element type") == std::string::npos &&
      result.message.find("): shape") == std::string::npos) {
    result.outcome = Outcome::Unsupported;
    result.feature = "random values (tcc's counter-based generator is not "
                     "numpy's; types and shapes matched)";
  }
  return result;
}

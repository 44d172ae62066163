//===- GradCheckConv3dTest.cpp - Finite differences of the 3-D windows ----===//
//
// The ONNX importer builds 3-D Conv, ConvTranspose, MaxPool and AveragePool
// from the 2-D ops over folded views (frontends/onnx/OnnxOpsConv3d.cpp), so
// their gradients are compositions of existing rules through slices,
// concats, transposes and reshapes. Each case here imports a tiny model
// (pools scaled up, so that their gradients stand well above rounding),
// runs the training pipeline (mse loss, SGD with lr 1, no weight decay, so
// a step moves each parameter by exactly its gradient) and compares that
// gradient with central finite differences of the compiled step's loss.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/ScheduleBuilder.h"
#include "dialects/tcc/TccDialect.h"
#include "frontends/onnx/OnnxImporter.h"
#include "passes/Passes.h"
#include "runtime/cpu/CpuSession.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

using namespace mlir;
namespace rt = ::tcc::rt;

namespace {

struct Case {
  const char *name;
  const char *text; // ONNX text; its float initializers are the parameters
  // Max pooling switches its argmax where two inputs are within the
  // finite-difference step: parameters then take distinct values on a grid
  // 0.05 apart, and the inputs are zero so the pool sees those values.
  bool distinct = false;
};

const Case kCases[] = {
    {"conv3d_groups_dilation_stride",
     R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 4, 5, 4, 4] x) => (y)
<float[6, 2, 3, 2, 2] w = {0}, float[6] b = {0}> {
  y = Conv <group = 2, pads = [1, 1, 0, 0, 0, 1], strides = [2, 1, 1], dilations = [2, 1, 2]> (x, w, b)
})"},
    {"conv3d_auto_pad",
     R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 3, 5] x) => (y)
<float[3, 2, 2, 3, 1] w = {0}> {
  y = Conv <auto_pad = "SAME_UPPER", strides = [1, 2, 2]> (x, w)
})"},
    {"conv_transpose3d",
     R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 2, 3, 2, 3] x) => (y)
<float[2, 2, 2, 3, 2] w = {0}, float[4] b = {0}> {
  y = ConvTranspose <group = 2, strides = [2, 1, 2], pads = [1, 0, 1, 1, 1, 0], output_padding = [1, 0, 0], dilations = [2, 1, 1]> (x, w, b)
})"},
    {"max_pool3d",
     R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[1, 2, 4, 5, 4] x) => (y)
<float[1, 2, 4, 5, 4] p = {0}> {
  h = Add (x, p)
  m = MaxPool <kernel_shape = [2, 3, 2], strides = [2, 2, 1], pads = [1, 1, 0, 0, 1, 1], dilations = [1, 1, 2], ceil_mode = 1> (h)
  s = Constant <value_float = 10.0> ()
  y = Mul (m, s)
})",
     true},
    {"avg_pool3d_count_include_pad",
     R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 2, 5, 4, 4] x) => (y)
<float[2, 2, 5, 4, 4] p = {0}> {
  h = Add (x, p)
  a = AveragePool <kernel_shape = [3, 2, 2], strides = [2, 1, 2], pads = [1, 0, 1, 1, 1, 0], count_include_pad = 1> (h)
  s = Constant <value_float = 20.0> ()
  y = Mul (a, s)
})"},
    {"avg_pool3d_ceil",
     R"(<ir_version: 8, opset_import: ["" : 17]>
g (float[2, 2, 5, 4, 4] x) => (y)
<float[2, 2, 5, 4, 4] p = {0}> {
  h = Add (x, p)
  a = AveragePool <kernel_shape = [2, 2, 3], strides = [1, 2, 2], pads = [1, 1, 1, 0, 0, 1], ceil_mode = 1> (h)
  s = Constant <value_float = 20.0> ()
  y = Mul (a, s)
})"},
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class GradCheckConv3d : public ::testing::TestWithParam<Case> {};

TEST_P(GradCheckConv3d, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  onnx::ModelProto model;
  onnx::Common::Status parsed = onnx::OnnxParser::Parse(model, c.text);
  ASSERT_TRUE(parsed.IsOK()) << parsed.ErrorMessage();
  // The text's initializers are placeholders: each gets random values.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::map<std::string, std::vector<float>> init;
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims())
      n *= d;
    std::vector<float> &v = init[t.name()];
    for (int64_t i = 0; i < n; ++i)
      v.push_back(c.distinct ? 0.05f * float(i) - 0.025f * float(n)
                             : uniform(rng));
    if (c.distinct)
      std::shuffle(v.begin(), v.end(), rng);
    t.clear_float_data();
    t.clear_raw_data();
    for (float f : v)
      t.add_float_data(f);
  }
  MLIRContext ctx;
  ctx.loadDialect<mlir::tcc::TccDialect, func::FuncDialect>();
  auto imported = mlir::tcc::importOnnxModel(&ctx, model, {}, c.name);
  ASSERT_TRUE(succeeded(imported));
  ModuleOp module = imported->get();
  mlir::tcc::TrainPipelineOptions pipe;
  pipe.loss = "mse";
  pipe.optimizer = "sgd";
  pipe.lr = 1.0;
  pipe.weightDecay = 0.0;
  pipe.optimize = false;
  PassManager pm(&ctx);
  mlir::tcc::buildTrainPipeline(pm, pipe);
  ASSERT_TRUE(succeeded(pm.run(module)));

  rt::Artifact a;
  ::tcc::ScheduleBuilder builder(a, init);
  auto fn = module.lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(fn);
  ASSERT_TRUE(succeeded(builder.lower(fn, "train_step")));
  rt::cpu::CpuSession s(a, rt::ExecMode::Compiled);
  const rt::Program &prog = *a.findProgram("train_step");
  for (int32_t id : prog.inputs) {
    const rt::TensorInfo &t = a.tensors[id];
    ASSERT_EQ(t.dtype, rt::DType::F32) << t.name;
    float *p = static_cast<float *>(s.data(id));
    bool zero = c.distinct && t.name == "x";
    for (int64_t i = 0; i < t.numElements(); ++i)
      p[i] = zero ? 0.0f : uniform(rng);
  }
  // The step's one output is the loss.
  ASSERT_EQ(prog.outputs.size(), 1u);
  int32_t lossId = prog.outputs[0];

  // Every step moves the parameters: each run starts from the initial ones.
  auto restore = [&] {
    for (auto &[name, v] : init)
      std::copy(v.begin(), v.end(), static_cast<float *>(s.data(name)));
  };
  auto loss = [&] {
    s.run("train_step");
    return (double)*static_cast<const float *>(s.data(lossId));
  };
  restore();
  loss();
  std::map<std::string, std::vector<float>> analytic;
  for (auto &[name, v] : init) {
    const float *after = static_cast<const float *>(s.data(name));
    for (size_t i = 0; i < v.size(); ++i)
      analytic[name].push_back(v[i] - after[i]); // lr 1
  }
  // A parameter the loss does not reach would pass trivially.
  for (auto &[name, g] : analytic)
    EXPECT_TRUE(llvm::any_of(g, [](float x) { return std::fabs(x) > 1e-4f; }))
        << c.name << ": the gradient of " << name << " is zero";
  const float eps = 1e-2f;
  for (auto &[name, v] : init) {
    for (size_t i = 0; i < v.size(); ++i) {
      restore();
      static_cast<float *>(s.data(name))[i] = v[i] + eps;
      double up = loss();
      restore();
      static_cast<float *>(s.data(name))[i] = v[i] - eps;
      double down = loss();
      double fd = (up - down) / (2 * eps);
      EXPECT_NEAR(analytic[name][i], fd, 1e-3 + 5e-3 * std::fabs(fd))
          << c.name << ": d loss / d " << name << "[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Windows3d, GradCheckConv3d,
                         ::testing::ValuesIn(kCases), [](const auto &info) {
                           return std::string(info.param.name);
                         });

} // namespace

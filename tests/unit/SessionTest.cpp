//===- SessionTest.cpp - Compiled vs eager execution of a tiny model ------===//
#include "runtime/cpu/CpuSession.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

using namespace tcc::rt;

namespace {
enum Id : int32_t {
  X,
  Target,
  W,
  M,
  V,
  Step,
  One,
  Labels,
  Lr, // persistent
  H,
  Y,
  Loss,
  Dy,
  Dh,
  Dw, // train_step temps
  H2,
  Y2, // forward temps
  H3,
  Ce, // xent temps
};

/// y = relu(x W); loss = mse(y, target); one AdamW step on W.
struct TinyModel {
  Artifact a;

  int32_t add(const std::string &name, std::vector<int64_t> shape,
              TensorKind kind, const std::vector<float> &init = {},
              DType dt = DType::F32) {
    TensorInfo t;
    t.name = name;
    t.shape = std::move(shape);
    t.kind = kind;
    t.dtype = dt;
    if (kind == TensorKind::Param || kind == TensorKind::State ||
        kind == TensorKind::Constant)
      t.dataOffset = a.addBlob(init.data(), init.size() * sizeof(float));
    a.tensors.push_back(t);
    return static_cast<int32_t>(a.tensors.size() - 1);
  }
  void temp(const std::string &name, std::vector<int64_t> shape,
            const std::string &program, int64_t offset) {
    add(name, std::move(shape), TensorKind::Temp);
    a.tensors.back().program = program;
    a.tensors.back().arenaOffset = offset;
  }

  TinyModel() {
    add("x", {4, 3}, TensorKind::Input);
    add("target", {4, 2}, TensorKind::Input);
    add("W", {3, 2}, TensorKind::Param,
        {0.5f, -0.25f, 0.75f, 0.1f, -0.3f, 0.2f});
    add("W.m", {3, 2}, TensorKind::State, std::vector<float>(6, 0.0f));
    add("W.v", {3, 2}, TensorKind::State, std::vector<float>(6, 0.0f));
    add("step", {}, TensorKind::State, {0.0f});
    add("one", {}, TensorKind::Constant, {1.0f});
    add("labels", {4}, TensorKind::Input, {}, DType::I64);
    add("optimizer.lr", {}, TensorKind::State, {0.05f});
    // A hand-made static plan: dh reuses dy in place (relu_grad is
    // element-wise) and dW reuses h, which is dead by then.
    temp("h", {4, 2}, "train_step", 0);
    temp("y", {4, 2}, "train_step", 64);
    temp("loss", {}, "train_step", 128);
    temp("dy", {4, 2}, "train_step", 192);
    temp("dh", {4, 2}, "train_step", 192);
    temp("dW", {3, 2}, "train_step", 0);
    temp("h2", {4, 2}, "forward", 0);
    temp("y2", {4, 2}, "forward", 32);
    temp("h3", {4, 2}, "xent", 0);
    temp("ce", {}, "xent", 64);

    Program train{"train_step", {X, Target}, {Loss}, {}, 256};
    train.instrs = {
        {"matmul", {X, W}, {H}, {0, 0}, {}},
        {"relu", {H}, {Y}, {}, {}},
        {"mse_loss", {Y, Target}, {Loss}, {}, {}},
        {"mse_loss_grad", {One, Y, Target}, {Dy}, {}, {}},
        {"relu_grad", {Dy, H}, {Dh}, {}, {}},
        {"matmul", {X, Dh}, {Dw}, {1, 0}, {}},
        {"add", {Step, One}, {Step}, {}, {}},
        {"adamw_update",
         {W, Dw, M, V, Step, Lr},
         {W, M, V},
         {0},
         {0.9, 0.999, 1e-8, 0.01}},
    };
    Program fwd{"forward", {X}, {Y2}, {}, 64};
    fwd.instrs = {{"matmul", {X, W}, {H2}, {0, 0}, {}},
                  {"relu", {H2}, {Y2}, {}, {}}};
    Program xent{"xent", {X, Labels}, {Ce}, {}, 128};
    xent.instrs = {
        {"matmul", {X, W}, {H3}, {0, 0}, {}},
        {"softmax_cross_entropy", {H3, Labels}, {Ce}, {-100}, {0.0}}};
    a.programs = {train, fwd, xent};
  }
};

std::vector<float> xData() {
  return {1, 2, 3, -1, 0.5f, 2, 0.25f, -2, 1, 3, 1, -1};
}
std::vector<float> targetData() { return {1, 0, 0, 1, 0.5f, 0.5f, 2, -1}; }

void fill(cpu::CpuSession &s, int32_t id, const std::vector<float> &v) {
  std::memcpy(s.data(id), v.data(), v.size() * sizeof(float));
}

std::vector<float> read(const cpu::CpuSession &s, int32_t id, size_t n) {
  std::vector<float> v(n);
  std::memcpy(v.data(), s.data(id), n * sizeof(float));
  return v;
}
} // namespace

TEST(Session, CompiledAndEagerAgreeBitForBit) {
  TinyModel m;
  cpu::CpuSession compiled(m.a, ExecMode::Compiled), eager(m.a, ExecMode::Eager);
  void *wBefore = compiled.data(W);
  for (cpu::CpuSession *s : {&compiled, &eager}) {
    fill(*s, X, xData());
    fill(*s, Target, targetData());
  }
  float firstLoss = 0;
  for (int step = 0; step < 5; ++step) {
    compiled.run("train_step");
    eager.run("train_step");
    float lc = read(compiled, Loss, 1)[0], le = read(eager, Loss, 1)[0];
    EXPECT_EQ(std::memcmp(&lc, &le, 4), 0) << "step " << step;
    if (step == 0)
      firstLoss = lc;
    for (int32_t id : {W, M, V, Step})
      EXPECT_EQ(std::memcmp(compiled.data(id), eager.data(id),
                            m.a.tensors[id].byteSize()),
                0)
          << m.a.tensors[id].name << " at step " << step;
  }
  EXPECT_EQ(read(compiled, Step, 1)[0], 5.0f);
  EXPECT_EQ(compiled.data(W), wBefore); // updated in place
  EXPECT_NE(read(compiled, W, 6),
            (std::vector<float>{0.5f, -0.25f, 0.75f, 0.1f, -0.3f, 0.2f}));
  EXPECT_LT(read(compiled, Loss, 1)[0], firstLoss);

  // The first loss is mean((relu(x W0) - t)^2), computed by hand here.
  std::vector<float> x = xData(), t = targetData(),
                     w = {0.5f, -0.25f, 0.75f, 0.1f, -0.3f, 0.2f};
  double want = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      double h = 0;
      for (int k = 0; k < 3; ++k)
        h += x[i * 3 + k] * w[k * 2 + j];
      double d = std::max(h, 0.0) - t[i * 2 + j];
      want += d * d / 8;
    }
  EXPECT_NEAR(firstLoss, want, 1e-6);

  compiled.run("forward");
  eager.run("forward");
  EXPECT_EQ(std::memcmp(compiled.data(Y2), eager.data(Y2), 32), 0);
}

// The learning rate is the state `optimizer.lr`, read by the update at
// each run: a train loop that writes it between steps (a schedule) changes
// the next update, in both modes, with no reload.
TEST(Session, LearningRateIsReadAtEachStep) {
  for (ExecMode mode : {ExecMode::Compiled, ExecMode::Eager}) {
    std::vector<std::vector<float>> w;
    for (float second : {0.05f, 0.05f, 0.0125f}) {
      TinyModel m;
      cpu::CpuSession s(m.a, mode);
      fill(s, X, xData());
      fill(s, Target, targetData());
      EXPECT_EQ(read(s, Lr, 1)[0], 0.05f); // the compiled default
      s.run("train_step");
      fill(s, Lr, {second});
      s.run("train_step");
      w.push_back(read(s, W, 6));
    }
    EXPECT_EQ(w[0], w[1]);
    for (size_t i = 0; i < 6; ++i)
      EXPECT_NE(w[0][i], w[2][i]) << "element " << i;
  }
}

TEST(Session, MemoryAccounting) {
  TinyModel m;
  cpu::CpuSession compiled(m.a, ExecMode::Compiled), eager(m.a, ExecMode::Eager);
  // x 48 + target 32 + W, m, v 3*24 + step 4 + one 4 + labels 32 + lr 4
  const int64_t persistent = 48 + 32 + 72 + 4 + 4 + 32 + 4;
  EXPECT_EQ(compiled.memory().persistentBytes, persistent);
  EXPECT_EQ(compiled.memory().tempPeakBytes, 0); // the arena is lazy
  compiled.run("train_step");
  EXPECT_EQ(compiled.memory().tempPeakBytes, 256);
  EXPECT_EQ(compiled.memory().peakBytes, persistent + 256);
  // The programs share the largest one's arena (not 256 + 64 + 128).
  compiled.run("forward");
  compiled.run("xent");
  EXPECT_EQ(compiled.memory().tempPeakBytes, 256);
  EXPECT_EQ(compiled.memory().peakBytes, persistent + 256);

  eager.run("train_step");
  // Peak at mse_loss_grad / relu_grad: h, loss, dy and y or dh.
  EXPECT_EQ(eager.memory().tempPeakBytes, 32 + 4 + 32 + 32);
  EXPECT_EQ(eager.memory().peakBytes, persistent + 100);
  EXPECT_NE(eager.data(Loss), nullptr); // outputs survive the run
  EXPECT_EQ(eager.data(H), nullptr);    // intermediates are freed
  eager.run("train_step");
  EXPECT_EQ(eager.memory().tempPeakBytes, 100); // nothing leaks across runs
}

// Each program's temps sit in the one arena at their planned offsets; only
// the program that ran last has buffers, and a run between two training
// steps (which overwrites the arena) changes nothing they compute.
TEST(Session, ProgramsShareOneArena) {
  TinyModel m;
  cpu::CpuSession s(m.a, ExecMode::Compiled), alone(m.a, ExecMode::Compiled);
  for (cpu::CpuSession *t : {&s, &alone}) {
    fill(*t, X, xData());
    fill(*t, Target, targetData());
  }
  s.run("train_step");
  alone.run("train_step");
  char *base = static_cast<char *>(s.data(H)); // offset 0
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(static_cast<char *>(s.data(Y)), base + 64);
  EXPECT_EQ(s.data(H2), nullptr); // forward has not run

  s.run("forward");
  EXPECT_EQ(static_cast<char *>(s.data(H2)), base);
  EXPECT_EQ(static_cast<char *>(s.data(Y2)), base + 32);
  EXPECT_EQ(s.data(Loss), nullptr); // train_step's temps are not live now
  EXPECT_EQ(s.data(H), nullptr);

  s.run("train_step");
  alone.run("train_step");
  EXPECT_EQ(s.data(Y2), nullptr);
  EXPECT_EQ(read(s, Loss, 1), read(alone, Loss, 1));
  EXPECT_EQ(read(s, W, 6), read(alone, W, 6));
}

TEST(Session, KernelErrorsSurfaceAndEagerRecovers) {
  TinyModel m;
  cpu::CpuSession s(m.a, ExecMode::Eager);
  fill(s, X, xData());
  std::vector<int64_t> labels = {0, 1, 2, 1};
  std::memcpy(s.data(Labels), labels.data(), 32);
  try {
    s.run("xent");
    FAIL();
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "label 2 at position 2 is outside [0, 2)");
  }
  labels[2] = 0;
  std::memcpy(s.data(Labels), labels.data(), 32);
  s.run("xent");
  EXPECT_TRUE(std::isfinite(read(s, Ce, 1)[0]));
}

static void expectSessionError(const Artifact &a, const std::string &needle) {
  for (ExecMode mode : {ExecMode::Compiled, ExecMode::Eager}) {
    try {
      cpu::CpuSession s(a, mode);
      ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << e.what();
    }
  }
}

TEST(Session, RejectsBadArtifacts) {
  TinyModel m;
  m.a.programs[0].instrs[1].kernel = "no_such_kernel";
  expectSessionError(m.a, "program 'train_step' instr 1 (no_such_kernel): "
                          "unknown kernel 'no_such_kernel'");
  m = TinyModel();
  m.a.programs[0].instrs[0].iattrs = {1, 0}; // x^T W: [3,4] x [3,2]
  expectSessionError(m.a, "program 'train_step' instr 0 (matmul): shapes");
  m = TinyModel();
  m.a.tensors[Dw].arenaOffset = 240; // 24 bytes from 240 > 256
  expectSessionError(m.a, "outside the arena of program 'train_step'");
  m = TinyModel();
  m.a.tensors[Dw].arenaOffset = 192; // over its own input dh
  expectSessionError(m.a, "matmul cannot run in place");
  m = TinyModel();
  m.a.tensors[Dh].arenaOffset = 200; // partially over dy
  expectSessionError(m.a, "partially overlaps");
  m = TinyModel();
  m.a.programs[0].instrs[1].inputs = {Y}; // read before written
  expectSessionError(m.a, "before any instr writes it");
  m = TinyModel();
  m.a.programs[1].instrs[0].outputs = {H}; // a temp of train_step
  expectSessionError(m.a, "a temp of program 'train_step'");

  cpu::CpuSession s(TinyModel().a, ExecMode::Compiled);
  EXPECT_THROW(s.run("eval"), Error);
  EXPECT_THROW(s.data(999), Error);
  EXPECT_THROW(s.data("nope"), Error);
  EXPECT_EQ(s.data("W"), s.data(W));
}

TEST(Session, ThreadSettingIsValidated) {
  TinyModel m;
  ::setenv("TCC_NUM_THREADS", "two", 1);
  expectSessionError(m.a, "TCC_NUM_THREADS='two' is not a positive integer");
  ::setenv("TCC_NUM_THREADS", "1", 1);
  EXPECT_NO_THROW(cpu::CpuSession(m.a, ExecMode::Compiled));
  ::unsetenv("TCC_NUM_THREADS");
}

TEST(Session, ProfileCountsCallsBytesAndFlops) {
  TinyModel m;
  for (ExecMode mode : {ExecMode::Compiled, ExecMode::Eager}) {
    cpu::CpuSession s(m.a, mode);
    fill(s, X, xData());
    fill(s, Target, targetData());
    s.run("train_step"); // not profiled
    s.setProfiling(true);
    s.run("train_step");
    s.run("train_step");
    std::map<std::string, Session::KernelTime> byName;
    for (const auto &k : s.profile())
      byName[k.kernel] = k;
    ASSERT_EQ(byName.size(), 7u);
    const auto &mm = byName.at("matmul");
    EXPECT_EQ(mm.calls, 4);
    // x W: [4,3] x [3,2]; x^T dh: [3,4] x [4,2]: 2 * 4 * 3 * 2 each.
    EXPECT_DOUBLE_EQ(mm.flops, 2 * (2.0 * 4 * 2 * 3 + 2.0 * 3 * 2 * 4));
    EXPECT_EQ(mm.bytes, 2 * ((12 + 6 + 8) + (12 + 8 + 6)) * 4);
    EXPECT_GE(mm.seconds, 0);
    const auto &relu = byName.at("relu");
    EXPECT_EQ(relu.calls, 2);
    EXPECT_EQ(relu.bytes, 2 * 16 * 4);
    EXPECT_EQ(relu.flops, 0);
  }
}

// By shape, the step's two GEMMs are two rows; the rest keep their names.
TEST(Session, ProfileByShapeSplitsGemmsByProblem) {
  TinyModel m;
  cpu::CpuSession s(m.a, ExecMode::Compiled);
  fill(s, X, xData());
  fill(s, Target, targetData());
  s.setProfiling(true, /*byShape=*/true);
  s.run("train_step");
  std::map<std::string, Session::KernelTime> byName;
  for (const auto &k : s.profile())
    byName[k.kernel] = k;
  EXPECT_EQ(byName.count("matmul"), 0u);
  ASSERT_EQ(byName.count("matmul [4x2] k3"), 1u);
  ASSERT_EQ(byName.count("matmul [3x2] k4"), 1u);
  EXPECT_EQ(byName.at("matmul [4x2] k3").calls, 1);
  EXPECT_DOUBLE_EQ(byName.at("matmul [3x2] k4").flops, 2.0 * 3 * 2 * 4);
  EXPECT_EQ(byName.at("relu").calls, 1);
}

//===- OffloadTest.cpp - The optimizer offload's plan and session ---------===//
//
// A hand-built offloaded artifact (what tcc-offload-optimizer and the code
// generator make): train_step writes the gradient of `w` into the input
// `offload.grad.w`, optimizer_step updates `w` from it with SGD at the rate
// in the state `optimizer.lr`, forward reads `w`. The plan must put the rate
// on the host alone, the gradient to the host and `w` back; the subsets
// must be valid artifacts; and training through an OffloadSession (two CPU
// sessions) must give the bits of the one session that runs all programs.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Backend.h"
#include "runtime/core/OffloadPlan.h"
#include "runtime/train/OffloadSession.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace tcc::rt;

namespace {

TensorInfo tensor(const std::string &name, std::vector<int64_t> shape,
                  TensorKind kind, const std::string &program = "") {
  TensorInfo t;
  t.name = name;
  t.shape = std::move(shape);
  t.kind = kind;
  t.program = program;
  return t;
}

enum : int32_t { X, W, Grad, Lr, Y, Out, Unused };

Artifact offloadedArtifact() {
  Artifact a;
  std::vector<float> w = {0.5f,   -1.0f, 0.25f,  2.0f, 0.0f,
                          -0.75f, 1.5f,  0.125f, -2.0f};
  float lr = 0.1f, unused = 3.0f;
  a.tensors.push_back(tensor("x", {2, 3}, TensorKind::Input));
  a.tensors.push_back(tensor("w", {3, 3}, TensorKind::Param));
  a.tensors[W].dataOffset = a.addBlob(w.data(), w.size() * sizeof(float));
  a.tensors.push_back(tensor("offload.grad.w", {3, 3}, TensorKind::Input));
  a.tensors.push_back(tensor("optimizer.lr", {}, TensorKind::State));
  a.tensors[Lr].dataOffset = a.addBlob(&lr, sizeof lr);
  a.tensors.push_back(
      tensor("train_step.y", {2, 3}, TensorKind::Temp, "train_step"));
  a.tensors[Y].arenaOffset = 0;
  a.tensors.push_back(tensor("forward.y", {2, 3}, TensorKind::Temp, "forward"));
  a.tensors[Out].arenaOffset = 0;
  a.tensors.push_back(tensor("unused", {}, TensorKind::State));
  a.tensors[Unused].dataOffset = a.addBlob(&unused, sizeof unused);

  Program train;
  train.name = "train_step";
  train.inputs = {X};
  train.outputs = {Y};
  train.arenaBytes = 64;
  // y = x w; the "gradient" x^T y, written where optimizer_step reads it.
  train.instrs.push_back({"matmul", {X, W}, {Y}, {0, 0}, {}});
  train.instrs.push_back({"matmul", {X, Y}, {Grad}, {1, 0}, {}});
  Program opt;
  opt.name = kOptimizerProgram;
  opt.inputs = {Grad};
  opt.instrs.push_back({"sgd_update", {W, Grad, Lr}, {W}, {}, {0.01}});
  Program fwd;
  fwd.name = "forward";
  fwd.inputs = {X};
  fwd.outputs = {Out};
  fwd.arenaBytes = 64;
  fwd.instrs.push_back({"matmul", {X, W}, {Out}, {0, 0}, {}});
  a.programs = {train, opt, fwd};
  validateArtifact(a);
  return a;
}

std::vector<float> download(Session &s, int32_t id) {
  std::vector<float> v(static_cast<size_t>(s.tensors()[id].numElements()));
  s.download(id, v.data());
  return v;
}

} // namespace

TEST(Offload, PlanSaysWhatLivesWhereAndWhatMoves) {
  Artifact a = offloadedArtifact();
  EXPECT_TRUE(isOffloaded(a));
  OffloadPlan p = offloadPlan(a);
  EXPECT_EQ(p.hostState, std::vector<int32_t>{Lr});
  EXPECT_EQ(p.toHost, std::vector<int32_t>{Grad});
  EXPECT_EQ(p.toDevice, std::vector<int32_t>{W});
  EXPECT_EQ(p.hostStateBytes, 4);
  EXPECT_EQ(p.toHostBytes, 36);
  EXPECT_EQ(p.toDeviceBytes, 36);

  a.programs.erase(a.programs.begin() + 1);
  EXPECT_FALSE(isOffloaded(a));
  EXPECT_TRUE(offloadPlan(a).toHost.empty());
}

TEST(Offload, PlanRefusesProgramsThatDoNotSplit) {
  Artifact both = offloadedArtifact();
  both.programs[0].instrs.push_back({"copy", {W}, {W}, {}, {}});
  try {
    offloadPlan(both);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "tensor 'w' is written by both optimizer_step "
                           "and a device program");
  }
  Artifact stale = offloadedArtifact();
  stale.programs[0].instrs.push_back({"copy", {Y}, {Lr}, {}, {}});
  try {
    offloadPlan(stale);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "tensor 'optimizer.lr' is read by optimizer_step "
                           "but written by a device program");
  }
  Artifact unwritten = offloadedArtifact();
  unwritten.programs[0].instrs.pop_back();
  try {
    offloadPlan(unwritten);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "tensor 'offload.grad.w': optimizer_step reads an "
                           "input that no device program writes");
  }
}

TEST(Offload, SubsetsAreValidArtifactsOfTheirPrograms) {
  Artifact a = offloadedArtifact();
  std::vector<int32_t> devIds, hostIds;
  Artifact dev = programSubset(a, {"train_step", "forward"}, devIds);
  Artifact host = programSubset(a, {kOptimizerProgram}, hostIds);
  validateArtifact(dev);
  validateArtifact(host);
  EXPECT_EQ(devIds, (std::vector<int32_t>{0, 1, 2, -1, 3, 4, -1}));
  EXPECT_EQ(hostIds, (std::vector<int32_t>{-1, 0, 1, 2, -1, -1, -1}));
  ASSERT_EQ(dev.programs.size(), 2u);
  EXPECT_EQ(dev.programs[0].instrs[1].outputs, std::vector<int32_t>{2});
  ASSERT_EQ(host.programs.size(), 1u);
  EXPECT_EQ(host.programs[0].instrs[0].inputs, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(host.programs[0].inputs, std::vector<int32_t>{1});
  try {
    programSubset(a, {"eval"}, devIds);
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "the artifact has no program 'eval'");
  }
}

// Three steps with a rate change between them: the parameters, the forward
// and the state agree bit for bit with one session running every program,
// in both execution modes.
TEST(Offload, SessionTrainsToTheBitsOfOneSession) {
  Artifact a = offloadedArtifact();
  for (ExecMode mode : {ExecMode::Compiled, ExecMode::Eager}) {
    std::unique_ptr<Session> one = openSession("cpu", a, mode);
    std::unique_ptr<Session> off = openTrainingSession("cpu", a, mode, {});
    auto *os = dynamic_cast<OffloadSession *>(off.get());
    ASSERT_NE(os, nullptr);
    EXPECT_EQ(os->device().tensors().size(), 5u);
    EXPECT_EQ(os->host().tensors().size(), 3u);
    EXPECT_EQ(off->tensors().size(), a.tensors.size());
    // Both sides hold w: the loop's mirror must go through upload.
    EXPECT_EQ(off->hostData(W), nullptr);
    EXPECT_NE(off->hostData(Lr), nullptr);

    const float x[6] = {1.0f, 0.5f, -0.25f, 0.75f, -1.5f, 2.0f};
    for (int step = 0; step < 3; ++step) {
      float lr = step == 2 ? 0.05f : 0.1f;
      for (Session *s : {one.get(), off.get()}) {
        s->upload(X, x);
        s->writeAsync(Lr, &lr, sizeof lr);
        s->run("train_step");
        s->run(kOptimizerProgram);
        s->synchronize();
      }
      EXPECT_EQ(download(*one, W), download(*off, W)) << "step " << step;
    }
    // The device's copy of w is the host's: the forward reads it.
    for (Session *s : {one.get(), off.get()})
      s->run("forward");
    std::vector<float> y1(6), y2(6);
    one->readAsync(Out, y1.data(), sizeof(float) * 6);
    off->readAsync(Out, y2.data(), sizeof(float) * 6);
    EXPECT_EQ(y1, y2);
    EXPECT_EQ(download(*off, Lr), std::vector<float>{0.05f});
    EXPECT_EQ(download(*off, Unused), std::vector<float>{3.0f});
    EXPECT_EQ(os->times().updates, 3);

    // A restored value (a checkpoint's) reaches both copies.
    std::vector<float> w(9, 0.5f);
    off->upload(W, w.data());
    EXPECT_EQ(download(os->device(), 1), w);
    EXPECT_EQ(download(os->host(), 0), w);
    EXPECT_NE(os->summary().find("optimizer offload: optimizer state 4 B"),
              std::string::npos)
        << os->summary();
  }
}

TEST(Offload, SessionNeedsAnOffloadedArtifact) {
  Artifact a = offloadedArtifact();
  a.programs.erase(a.programs.begin() + 1);
  try {
    OffloadSession s(a, "cpu", ExecMode::Compiled, {});
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "the artifact has no optimizer_step program "
                           "(compile it with tcc compile --offload-optimizer)");
  }
}

//===- TraceTest.cpp - The Perfetto trace: JSON, nesting, memory track ----===//
#include "runtime/core/Trace.h"

#include "compiler/codegen/MemoryPlanner.h"
#include "runtime/cpu/CpuSession.h"

#include <nlohmann/json.hpp>

#include "tests/unit/ProgramBuilder.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace tcc;
using nlohmann::json;
using rt::TensorKind;

namespace {
using Builder = test::ProgramBuilder;

/// x -> matmul h -> relu r (over h) -> add s (over r) -> matmul y: two
/// buffers in the compiled plan, two temps live at once in eager mode.
Builder chain() {
  Builder b;
  int32_t x = b.tensor(TensorKind::Input, {8, 16});
  int32_t w = b.tensor(TensorKind::Param, {16, 16});
  int32_t h = b.op("matmul", {x, w}, {8, 16}, {0, 0});
  int32_t r = b.op("relu", {h}, {8, 16});
  int32_t s = b.op("add", {r, r}, {8, 16});
  int32_t y = b.op("matmul", {s, w}, {8, 16}, {0, 0});
  b.p.name = "train_step";
  b.p.inputs = {x};
  b.p.outputs = {y};
  planProgramMemory(b.a, b.p);
  b.a.programs.push_back(b.p);
  return b;
}

std::vector<const json *> select(const json &trace, const std::string &ph,
                                 const std::string &cat) {
  std::vector<const json *> v;
  for (const json &e : trace["traceEvents"])
    if (e["ph"] == ph && (cat.empty() || e.value("cat", "") == cat))
      v.push_back(&e);
  return v;
}

bool inside(const json &inner, const json &outer) {
  return inner["pid"] == outer["pid"] && inner["tid"] == outer["tid"] &&
         inner["ts"].get<double>() >= outer["ts"].get<double>() &&
         inner["ts"].get<double>() + inner["dur"].get<double>() <=
             outer["ts"].get<double>() + outer["dur"].get<double>() + 1e-3;
}
} // namespace

// The memory track's extent peaks at the plan's arena and its live bytes at
// the planner's live peak, on random programs with in-place chains and
// views; no two tensors of a lane are live at once.
TEST(Trace, TimelineMatchesThePlan) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    Builder b = test::randomProgram(rng, /*fused=*/false);
    planProgramMemory(b.a, b.p);
    ProgramLifetimes L = analyzeLifetimes(b.a, b.p, true);
    rt::ProgramMemoryTimeline tl =
        rt::programMemoryTimeline(b.p, b.a.tensors, true);
    EXPECT_EQ(tl.extentPeak, b.p.arenaBytes) << trial;
    EXPECT_EQ(tl.livePeak, L.livePeak) << trial;
    EXPECT_EQ(tl.liveBytes.size(), b.p.instrs.size() + 1);
    for (const auto &u : tl.tensors)
      for (const auto &v : tl.tensors)
        if (&u != &v && u.lane == v.lane) {
          EXPECT_TRUE(u.last < v.first || v.last < u.first) << trial;
        }
  }
}

// A traced compiled session: valid JSON, every kernel inside its run and
// its step, the counters following the plan, only the first steps in
// detail, rare spans after them.
TEST(Trace, CompiledRunsNestInSteps) {
  Builder b = chain();
  rt::cpu::CpuSession s(b.a, rt::ExecMode::Compiled);
  rt::Tracer t(2, "test");
  s.setTracer(&t);
  for (int64_t step = 1; step <= 3; ++step) {
    t.beginStep(step);
    s.run("train_step");
    t.endStep();
  }
  EXPECT_FALSE(t.detailed());
  EXPECT_EQ(t.detailedSteps(), 2);
  auto now = rt::Tracer::Clock::now();
  t.span("checkpoint", "kept", now, now, {}, /*rare=*/true);
  t.span("copy", "dropped", now, now);
  json trace = json::parse(t.json());

  auto steps = select(trace, "X", "step");
  auto runs = select(trace, "X", "run");
  auto kernels = select(trace, "X", "kernel");
  ASSERT_EQ(steps.size(), 2u);
  ASSERT_EQ(runs.size(), 2u);
  ASSERT_EQ(kernels.size(), 2 * b.p.instrs.size());
  for (const json *k : kernels) {
    int hosts = 0;
    for (const json *st : steps)
      hosts += inside(*k, *st);
    EXPECT_EQ(hosts, 1) << k->dump();
    EXPECT_TRUE(inside(*k, *runs[0]) || inside(*k, *runs[1])) << k->dump();
  }
  EXPECT_EQ((*kernels[0])["name"], "matmul");
  EXPECT_EQ((*kernels[0])["args"]["flops"], 2 * 8 * 16 * 16);
  EXPECT_EQ((*kernels[0])["args"]["inputs"], "t0 f32[8,16]; t1 f32[16,16]");

  rt::ProgramMemoryTimeline tl =
      rt::programMemoryTimeline(b.p, b.a.tensors, true);
  std::vector<int64_t> live;
  int64_t extentPeak = 0;
  for (const json *c : select(trace, "C", "memory")) {
    if ((*c)["name"] == "arena live bytes")
      live.push_back((*c)["args"]["bytes"]);
    else if ((*c)["name"] == "arena in use up to")
      extentPeak = std::max<int64_t>(extentPeak, (*c)["args"]["bytes"]);
  }
  EXPECT_EQ(extentPeak, b.p.arenaBytes);
  // Per run: the values where they change.
  std::vector<int64_t> expected;
  for (int64_t v : tl.liveBytes)
    if (expected.empty() || expected.back() != v)
      expected.push_back(v);
  ASSERT_EQ(live.size(), 2 * expected.size());
  for (size_t i = 0; i < live.size(); ++i)
    EXPECT_EQ(live[i], expected[i % expected.size()]) << i;
  EXPECT_EQ(*std::max_element(live.begin(), live.end()), b.p.arenaBytes);

  auto tensors = select(trace, "X", "tensor");
  ASSERT_EQ(tensors.size(), 2 * 4u);
  for (const json *e : tensors) {
    int32_t id = b.a.findTensor((*e)["name"]);
    ASSERT_GE(id, 0);
    EXPECT_EQ((*e)["args"]["offset"], b.a.tensors[id].arenaOffset);
    EXPECT_EQ((*e)["pid"], 2);
  }
  int rare = 0, dropped = 0;
  for (const json &e : trace["traceEvents"]) {
    rare += e["name"] == "kept";
    dropped += e["name"] == "dropped";
  }
  EXPECT_EQ(rare, 1);
  EXPECT_EQ(dropped, 0);
}

// Eager: the counter is the bytes of live temporaries, peaking where the
// session's own accounting does.
TEST(Trace, EagerCountsLiveTemporaries) {
  Builder b = chain();
  rt::cpu::CpuSession s(b.a, rt::ExecMode::Eager);
  rt::Tracer t(1);
  s.setTracer(&t);
  t.beginStep(1);
  s.run("train_step");
  t.endStep();
  json trace = json::parse(t.json());
  int64_t peak = 0;
  for (const json *c : select(trace, "C", "memory")) {
    EXPECT_EQ((*c)["name"], "eager temporaries bytes");
    peak = std::max<int64_t>(peak, (*c)["args"]["bytes"]);
  }
  EXPECT_EQ(peak, s.memory().tempPeakBytes);
  for (const json *e : select(trace, "X", "tensor"))
    EXPECT_FALSE((*e)["args"].contains("offset"));
}

// Off: a session without a tracer records nothing and a span-scope costs a
// branch; the file is written whole, and a path that cannot be written is
// refused before a run.
TEST(Trace, WritesAtomicallyAndRefusesBadPaths) {
  rt::TraceScope off(nullptr, "copy");
  EXPECT_FALSE(off.active());
  EXPECT_THROW(rt::Tracer::checkWritable("/nonexistent-dir/t.json"), rt::Error);
  try {
    rt::Tracer::checkWritable("/nonexistent-dir/t.json");
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("--trace /nonexistent-dir/t.json: "
                                         "cannot write"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(rt::Tracer::checkWritable("/tmp"), rt::Error);

  std::string path =
      testing::TempDir() + "trace-test-" + std::to_string(::getpid()) + ".json";
  rt::Tracer t(1);
  t.note("device", "cpu");
  {
    rt::TraceScope s(&t, "copy");
    ASSERT_TRUE(s.active());
    s.name("upload \"x\"").arg(rt::traceArg("bytes", 12.0));
  }
  rt::Tracer::checkWritable(path);
  t.write(path);
  std::ifstream in(path);
  json j = json::parse(in);
  EXPECT_EQ(j["otherData"]["device"], "cpu");
  auto copies = select(j, "X", "copy");
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ((*copies[0])["name"], "upload \"x\"");
  EXPECT_EQ((*copies[0])["args"]["bytes"], 12);
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());
  std::remove(path.c_str());
}

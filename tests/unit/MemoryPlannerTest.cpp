//===- MemoryPlannerTest.cpp - Arena plans and the memory report ----------===//
#include "compiler/codegen/MemoryPlanner.h"
#include "compiler/codegen/MemoryReport.h"
#include "runtime/cpu/CpuSession.h"
#include "runtime/cpu/Kernels.h"

#include "tests/unit/ProgramBuilder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace tcc;
using rt::TensorKind;

namespace {
using Builder = test::ProgramBuilder;

/// Temps whose lifetimes overlap never share bytes, except along an
/// in-place chain (same offset, handed over at one instruction).
void expectNoConflicts(const rt::Artifact &a, const rt::Program &p,
                       const ProgramLifetimes &L) {
  for (size_t i = 0; i < a.tensors.size(); ++i)
    for (size_t j = i + 1; j < a.tensors.size(); ++j) {
      if (L.bufferOf[i] < 0 || L.bufferOf[j] < 0 ||
          L.bufferOf[i] == L.bufferOf[j])
        continue;
      bool together = L.first[i] <= L.last[j] && L.first[j] <= L.last[i];
      int64_t bi = a.tensors[i].arenaOffset, bj = a.tensors[j].arenaOffset;
      bool overlap = bi < bj + a.tensors[j].byteSize() &&
                     bj < bi + a.tensors[i].byteSize();
      EXPECT_FALSE(together && overlap) << i << " and " << j;
      EXPECT_LE(bi + a.tensors[i].byteSize(), p.arenaBytes);
    }
}
} // namespace

TEST(MemoryPlanner, InPlaceChainsShareBytes) {
  Builder b;
  int32_t x = b.tensor(TensorKind::Input, {8, 16});
  int32_t w = b.tensor(TensorKind::Param, {16, 16});
  int32_t h = b.op("matmul", {x, w}, {8, 16}, {0, 0});
  int32_t r = b.op("relu", {h}, {8, 16});   // h dies here: r takes its bytes
  int32_t s = b.op("add", {r, r}, {8, 16}); // and s takes r's
  int32_t y = b.op("matmul", {s, w}, {8, 16}, {0, 0}); // not in place
  b.p.name = "train_step";
  b.p.inputs = {x};
  b.p.outputs = {y};
  planProgramMemory(b.a, b.p);
  EXPECT_EQ(b.a.tensors[h].arenaOffset, b.a.tensors[r].arenaOffset);
  EXPECT_EQ(b.a.tensors[r].arenaOffset, b.a.tensors[s].arenaOffset);
  EXPECT_NE(b.a.tensors[s].arenaOffset, b.a.tensors[y].arenaOffset);
  EXPECT_EQ(b.p.arenaBytes, 2 * 8 * 16 * 4);
  // The session accepts the plan (its aliasing check) and runs it.
  b.a.programs.push_back(b.p);
  rt::cpu::CpuSession session(b.a, rt::ExecMode::Compiled);
  session.run("train_step");
  rt::MemoryStats m = session.memory();
  EXPECT_EQ(m.tempPeakBytes, b.p.arenaBytes);
  EXPECT_GE(m.measuredPeakBytes, m.persistentBytes + b.p.arenaBytes);

  // Eager allocates each output before it frees the dying input, so each
  // pair of consecutive temps is live at once: the same two buffers.
  rt::cpu::CpuSession eager(b.a, rt::ExecMode::Eager);
  eager.run("train_step");
  rt::MemoryStats e = eager.memory();
  EXPECT_EQ(e.tempPeakBytes, 2 * 8 * 16 * 4);
  EXPECT_GE(e.measuredPeakBytes, e.persistentBytes + e.tempPeakBytes);

  // Without reuse every temp has its own bytes.
  planProgramMemory(b.a, b.p, /*reuse=*/false);
  EXPECT_EQ(b.p.arenaBytes, 4 * 8 * 16 * 4);
  expectNoConflicts(b.a, b.p, analyzeLifetimes(b.a, b.p, false));
}

// A generated kernel's output takes a dying input's bytes only for a pair
// its instr lists after the kernel index, and only when no other input of
// the instr is in that buffer (a reshape view of it).
TEST(MemoryPlanner, FusedKernelsShareOnlyListedPairs) {
  Builder b;
  int32_t x = b.tensor(TensorKind::Input, {8, 16});
  int32_t w = b.tensor(TensorKind::Param, {16, 16});
  int32_t h1 = b.op("matmul", {x, w}, {8, 16}, {0, 0});
  int32_t h2 = b.op("matmul", {x, w}, {8, 16}, {0, 0});
  int32_t f = b.op("fused", {h1, h2}, {8, 16}, {0, 0, 1}); // over h2 only
  int32_t g = b.op("fused", {f, x}, {8, 16}, {1});         // no pair
  int32_t v = b.op("copy", {g}, {128});                    // a view of g
  int32_t k = b.op("fused", {g, v}, {128}, {2, 0, 0});     // g's buffer
                                                           // holds v too
  b.p.name = "train_step";
  b.p.inputs = {x};
  b.p.outputs = {k};
  planProgramMemory(b.a, b.p);
  auto at = [&](int32_t id) { return b.a.tensors[id].arenaOffset; };
  EXPECT_EQ(at(f), at(h2));
  EXPECT_NE(at(f), at(h1));
  EXPECT_NE(at(g), at(f));
  EXPECT_EQ(at(v), at(g));
  EXPECT_NE(at(k), at(g));
  expectNoConflicts(b.a, b.p, analyzeLifetimes(b.a, b.p, true));
  for (const rt::Instr &in : b.p.instrs)
    EXPECT_NO_THROW(rt::checkAliasing(in, b.a.tensors)) << in.kernel;

  // The runtime's checks: an overlap needs a listed pair; the pairs name
  // an output and an input.
  rt::Instr in = b.p.instrs[2]; // f over h2
  in.iattrs = {0, 0, 0};
  try {
    rt::checkAliasing(in, b.a.tensors);
    ADD_FAILURE() << "an unlisted overlap was accepted";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "output 0 't4' overlaps input 1 't3' in memory, but fused "
                  "does not list that pair in place"),
              std::string::npos)
        << e.what();
  }
  for (auto [iattrs, needle] :
       std::vector<std::pair<std::vector<int64_t>, std::string>>{
           {{0, 0}, "expects the kernel index and (output, input) pairs"},
           {{0, 1, 0},
            "in-place pair (1, 0) names no output/input (1 "
            "outputs, 2 inputs)"},
           {{0, 0, 2}, "in-place pair (0, 2)"}}) {
    in.iattrs = iattrs;
    try {
      rt::checkInstr(in, b.a.tensors);
      ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const rt::Error &e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << e.what();
    }
  }
}

// A reshape (copy between temps of one size) is a view of its input's
// bytes even while the input lives on; nothing may then write over them in
// place until both are dead. Compiled (views) and eager (real copies) agree.
TEST(MemoryPlanner, ReshapesAreViews) {
  Builder b;
  int32_t x = b.tensor(TensorKind::Input, {8, 16});
  int32_t w = b.tensor(TensorKind::Param, {16, 16});
  int32_t h = b.op("matmul", {x, w}, {8, 16}, {0, 0});
  int32_t v = b.op("copy", {h}, {128});      // a view of h
  int32_t r = b.op("relu", {h}, {8, 16});    // h's last read: v still lives
  int32_t v2 = b.op("copy", {v}, {8, 16});   // a view of the view
  int32_t y = b.op("sub", {v2, r}, {8, 16}); // min(h, 0)
  b.p.name = "train_step";
  b.p.inputs = {x};
  b.p.outputs = {y};
  planProgramMemory(b.a, b.p);
  EXPECT_EQ(b.a.tensors[v].arenaOffset, b.a.tensors[h].arenaOffset);
  EXPECT_EQ(b.a.tensors[v2].arenaOffset, b.a.tensors[h].arenaOffset);
  EXPECT_NE(b.a.tensors[r].arenaOffset, b.a.tensors[h].arenaOffset);
  ProgramLifetimes L = analyzeLifetimes(b.a, b.p, true);
  EXPECT_EQ(L.buffers.size(), 2u);
  EXPECT_EQ(b.p.arenaBytes, 2 * 8 * 16 * 4);
  expectNoConflicts(b.a, b.p, L);

  b.a.programs.push_back(b.p);
  std::vector<std::vector<float>> outs;
  for (rt::ExecMode mode : {rt::ExecMode::Compiled, rt::ExecMode::Eager}) {
    rt::cpu::CpuSession s(b.a, mode);
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    for (int32_t id : {x, w}) {
      float *p = static_cast<float *>(s.data(id));
      for (int64_t i = 0; i < b.a.tensors[id].numElements(); ++i)
        p[i] = nd(rng);
    }
    s.run("train_step");
    const float *out = static_cast<const float *>(s.data(y));
    outs.emplace_back(out, out + 128);
  }
  EXPECT_EQ(outs[0], outs[1]);
  int negative = 0;
  for (float f : outs[0])
    negative += f < 0;
  EXPECT_GT(negative, 0); // min(h, 0): the view still held h after relu
}

// A prefix slice (a padded leading axis cut back) is a view of its input's
// first bytes, like a reshape; any other slice gets its own bytes, and the
// runtime refuses one placed over its input. Compiled (views) and eager
// (real copies) agree.
TEST(MemoryPlanner, PrefixSlicesAreViews) {
  Builder b;
  int32_t x = b.tensor(TensorKind::Input, {8, 16});
  int32_t w = b.tensor(TensorKind::Param, {16, 16});
  int32_t h = b.op("matmul", {x, w}, {8, 16}, {0, 0});
  int32_t s = b.op("slice", {h}, {5, 16}, {0, 0, 1, 1}); // h's rows 0-4
  int32_t q = b.op("slice", {h}, {5, 16}, {1, 0, 1, 1}); // rows 1-5: a copy
  int32_t r = b.op("relu", {h}, {8, 16}); // h's last read: s lives on
  int32_t t = b.op("slice", {r}, {5, 16}, {0, 0, 1, 1});
  int32_t y = b.op("sub", {s, t}, {5, 16}); // min(h, 0) of rows 0-4
  b.p.name = "train_step";
  b.p.inputs = {x};
  b.p.outputs = {y, q};
  planProgramMemory(b.a, b.p);
  auto at = [&](int32_t id) { return b.a.tensors[id].arenaOffset; };
  EXPECT_EQ(at(s), at(h));
  EXPECT_EQ(at(t), at(r));
  EXPECT_NE(at(q), at(h));
  EXPECT_NE(at(r), at(h));
  expectNoConflicts(b.a, b.p, analyzeLifetimes(b.a, b.p, true));
  for (const rt::Instr &in : b.p.instrs)
    EXPECT_NO_THROW(rt::checkAliasing(in, b.a.tensors)) << in.kernel;

  b.a.programs.push_back(b.p);
  std::vector<std::vector<float>> outs;
  for (rt::ExecMode mode : {rt::ExecMode::Compiled, rt::ExecMode::Eager}) {
    rt::cpu::CpuSession sess(b.a, mode);
    std::mt19937 rng(5);
    std::normal_distribution<float> nd;
    for (int32_t id : {x, w}) {
      float *p = static_cast<float *>(sess.data(id));
      for (int64_t i = 0; i < b.a.tensors[id].numElements(); ++i)
        p[i] = nd(rng);
    }
    sess.run("train_step");
    for (int32_t id : {y, q}) {
      const float *out = static_cast<const float *>(sess.data(id));
      outs.emplace_back(out, out + 80);
    }
  }
  EXPECT_EQ(outs[0], outs[2]);
  EXPECT_EQ(outs[1], outs[3]);
  EXPECT_GT(std::count_if(outs[0].begin(), outs[0].end(),
                          [](float f) { return f < 0; }),
            0); // min(h, 0): the view still held h after relu

  // The runtime's check: a slice that is not a prefix may not sit on its
  // input's bytes.
  std::vector<rt::TensorInfo> tensors = b.a.tensors;
  tensors[q].arenaOffset = tensors[h].arenaOffset;
  try {
    rt::checkAliasing(b.p.instrs[2], tensors);
    ADD_FAILURE() << "a non-prefix slice over its input was accepted";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("but slice cannot run in place"),
              std::string::npos)
        << e.what();
  }
  // Nor a prefix slice that starts elsewhere in its input's bytes.
  tensors[s].arenaOffset = tensors[h].arenaOffset + 64;
  EXPECT_THROW(rt::checkAliasing(b.p.instrs[1], tensors), rt::Error);
}

TEST(MemoryPlanner, RandomProgramsHaveNoConflicts) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    Builder b = test::randomProgram(rng, /*fused=*/true);
    planProgramMemory(b.a, b.p);
    ProgramLifetimes L = analyzeLifetimes(b.a, b.p, true);
    EXPECT_GE(b.p.arenaBytes, L.livePeak);
    expectNoConflicts(b.a, b.p, L);
    // Every overlap the plan made is one the runtime accepts.
    for (const rt::Instr &in : b.p.instrs)
      EXPECT_NO_THROW(rt::checkAliasing(in, b.a.tensors)) << in.kernel;
  }
}

TEST(MemoryReport, ClassifiesParamsGradientsAndOptimizerState) {
  Builder b;
  int32_t x = b.tensor(TensorKind::Input, {4, 8});
  int32_t w = b.tensor(TensorKind::Param, {8, 8});
  int32_t m = b.tensor(TensorKind::State, {8, 8});
  int32_t lr = b.tensor(TensorKind::State, {});
  int32_t y = b.op("matmul", {x, w}, {4, 8}, {0, 0});
  int32_t loss = b.op("reduce_sum", {y}, {}, {0, 1});
  int32_t g = b.op("matmul", {x, y}, {8, 8}, {1, 0}); // reads y after loss
  b.p.instrs.push_back(
      {"sgd_momentum_update", {w, g, m, lr}, {w, m}, {0}, {0.9, 0.0}});
  b.p.name = "train_step";
  b.p.inputs = {x};
  b.p.outputs = {loss};
  planProgramMemory(b.a, b.p);
  b.a.programs.push_back(b.p);
  MemoryReport r = analyzeMemory(b.a);
  EXPECT_EQ(r.weights, 8 * 8 * 4);
  EXPECT_EQ(r.optimizerState, 8 * 8 * 4 + 4); // the buffer and the rate
  EXPECT_EQ(r.inputs, 4 * 8 * 4);
  const MemoryReport::Program *p = r.find("train_step");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->savedActivations, 4 * 8 * 4); // y
  EXPECT_EQ(p->gradientTotal, 8 * 8 * 4);    // g
  EXPECT_EQ(p->activations + p->gradients + p->temporaries, p->livePeak);
  EXPECT_EQ(r.predictedPeak({"train_step"}), r.persistent() + b.p.arenaBytes);

  // A second program's arena: the session shares the larger one.
  rt::Program small = b.p;
  small.name = "forward";
  small.arenaBytes = b.p.arenaBytes / 2;
  b.a.programs.push_back(small);
  MemoryReport two = analyzeMemory(b.a);
  EXPECT_EQ(two.sharedArena(), b.p.arenaBytes);
  EXPECT_EQ(two.predictedPeak({"train_step"}),
            two.persistent() + b.p.arenaBytes);
}

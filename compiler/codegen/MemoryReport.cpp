//===- MemoryReport.cpp - Predicted memory anatomy of an artifact ---------===//
#include "compiler/codegen/MemoryReport.h"

#include "compiler/codegen/MemoryPlanner.h"
#include "runtime/core/AttentionPlan.h"
#include "runtime/core/abi/KernelAbi.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>

using K = ::tcc::rt::abi::KernelId;

using namespace tcc;

std::string tcc::formatBytesExact(int64_t bytes) {
  char buf[64];
  if (bytes >= (1 << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%lld B", (long long)bytes);
  return std::string(buf) + " (" + std::to_string(bytes) + " bytes)";
}

static bool isOptimizerKernel(const rt::Instr &in) {
  return rt::abi::is(in, K::AdamwUpdate) || rt::abi::is(in, K::SgdUpdate) ||
         rt::abi::is(in, K::SgdMomentumUpdate) ||
         rt::abi::is(in, K::LionUpdate) || rt::abi::is(in, K::AdafactorUpdate);
}

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Floats of the two unfold buffers of one convolution instr (see
/// runtime/cpu/KernelsConv.cpp): col [K, N*P] and the GEMM result or
/// gathered gradient [O/groups, N*P].
static std::pair<int64_t, int64_t> convScratch(const rt::Artifact &a,
                                               const rt::Instr &in) {
  const std::vector<int64_t> *w = nullptr, *y = nullptr;
  if (rt::abi::is(in, K::Conv2d)) {
    w = &a.tensors[in.inputs.at(1)].shape;
    y = &a.tensors[in.outputs.at(0)].shape;
  } else if (rt::abi::is(in, K::Conv2dGradInput)) {
    w = &a.tensors[in.inputs.at(1)].shape;
    y = &a.tensors[in.inputs.at(0)].shape;
  } else if (rt::abi::is(in, K::Conv2dGradWeight)) {
    w = &a.tensors[in.outputs.at(0)].shape;
    y = &a.tensors[in.inputs.at(0)].shape;
  } else {
    return {0, 0};
  }
  // The report reads the artifact before the runtime checks it.
  std::optional<rt::abi::Conv2dAttrs> c =
      rt::abi::tryAttrsOf<rt::abi::Conv2dAttrs>(in);
  if (w->size() != 4 || y->size() != 4 || !c || c->groups <= 0)
    return {0, 0};
  int64_t k = (*w)[1] * (*w)[2] * (*w)[3];
  int64_t np = (*y)[0] * (*y)[2] * (*y)[3];
  int64_t og = (*w)[0] / c->groups;
  if (np == 0 || k == 0)
    return {0, 0};
  return {k * np, og * np};
}

MemoryReport tcc::analyzeMemory(const rt::Artifact &a) {
  MemoryReport r;
  // State roles from the kernels that touch them.
  std::set<int32_t> optimizerState, gradients;
  for (const rt::Program &p : a.programs)
    for (const rt::Instr &in : p.instrs) {
      if (isOptimizerKernel(in)) {
        for (size_t i = 2; i < in.inputs.size(); ++i)
          optimizerState.insert(in.inputs[i]);
        for (size_t i = 1; i < in.outputs.size(); ++i)
          optimizerState.insert(in.outputs[i]);
        if (in.inputs.size() > 1)
          gradients.insert(in.inputs[1]);
      }
      // What is added into a gradient accumulator is a gradient.
      for (int32_t out : in.outputs)
        if (endsWith(a.tensors[out].name, ".grad_acc"))
          for (int32_t id : in.inputs)
            if (id != out)
              gradients.insert(id);
    }
  // State computed into an optimizer operand through other kernels (the
  // AdamW step counter: step + 1 into a temp, copied back at the end).
  for (int pass = 0; pass < 2; ++pass)
    for (const rt::Program &p : a.programs)
      for (const rt::Instr &in : p.instrs) {
        if (isOptimizerKernel(in))
          continue;
        bool touches = false;
        for (const auto *ids : {&in.inputs, &in.outputs})
          for (int32_t id : *ids)
            touches |= optimizerState.count(id) > 0;
        if (touches)
          for (const auto *ids : {&in.inputs, &in.outputs})
            for (int32_t id : *ids)
              if (a.tensors[id].kind == rt::TensorKind::State)
                optimizerState.insert(id);
      }
  for (size_t id = 0; id < a.tensors.size(); ++id) {
    const rt::TensorInfo &t = a.tensors[id];
    int64_t bytes = t.byteSize();
    switch (t.kind) {
    case rt::TensorKind::Param:
      r.weights += bytes;
      break;
    case rt::TensorKind::State:
      if (t.init.kind == rt::InitSpec::Kind::Cast)
        r.weightCopies += bytes;
      else if (endsWith(t.name, ".grad_acc"))
        r.gradAccumulators += bytes;
      else if (optimizerState.count((int32_t)id))
        r.optimizerState += bytes;
      else
        r.otherState += bytes;
      break;
    case rt::TensorKind::Input:
      r.inputs += bytes;
      break;
    case rt::TensorKind::Constant:
      r.constants += bytes;
      break;
    case rt::TensorKind::Temp:
      break;
    }
  }

  for (const rt::Program &p : a.programs) {
    MemoryReport::Program pr;
    pr.name = p.name;
    pr.arena = p.arenaBytes;
    pr.numInstrs = (int64_t)p.instrs.size();
    ProgramLifetimes L = analyzeLifetimes(a, p, /*inPlace=*/true);
    // The lifetimes of the plan actually in the artifact: without reuse
    // (--no-plan-memory) no buffers were merged.
    bool unshared = false;
    for (const auto &b : L.buffers)
      unshared |=
          b.tensors.size() > 1 && a.tensors[b.tensors[0]].arenaOffset !=
                                      a.tensors[b.tensors[1]].arenaOffset;
    if (unshared)
      L = analyzeLifetimes(a, p, /*inPlace=*/false);
    pr.livePeak = L.livePeak;
    pr.peakInstr = L.livePeakAt;
    for (const auto &b : L.buffers)
      pr.sumOfTemps += b.size * (int64_t)b.tensors.size();

    // The loss instr: the one writing the program's first output, when it
    // is a scalar (train_step, accumulate; not forward's logits, nor the
    // grad_norm metric an accumulating train_step returns alone).
    int64_t loss = -1;
    if (!p.outputs.empty() && a.tensors[p.outputs[0]].shape.empty() &&
        a.tensors[p.outputs[0]].name != "grad_norm")
      for (size_t i = 0; i < p.instrs.size() && loss < 0; ++i)
        for (int32_t id : p.instrs[i].outputs)
          if (id == p.outputs[0])
            loss = (int64_t)i;
    auto isActivation = [&](int32_t id) {
      return loss >= 0 && L.first[id] < loss && L.last[id] > loss &&
             !gradients.count(id);
    };
    for (size_t id = 0; id < a.tensors.size(); ++id) {
      if (L.bufferOf[id] < 0)
        continue;
      int64_t bytes = a.tensors[id].byteSize();
      if (isActivation((int32_t)id))
        pr.savedActivations += bytes;
      if (gradients.count((int32_t)id))
        pr.gradientTotal += bytes;
    }
    for (const auto &b : L.buffers) {
      if (b.first > pr.peakInstr || b.last < pr.peakInstr)
        continue;
      // The tensor of the chain that occupies the buffer there (the later
      // one where an in-place kernel hands the bytes over).
      int32_t id = b.tensors[0];
      for (int32_t t : b.tensors)
        if (L.first[t] <= pr.peakInstr)
          id = t;
      if (gradients.count(id))
        pr.gradients += b.size;
      else if (isActivation(id))
        pr.activations += b.size;
      else
        pr.temporaries += b.size;
    }

    int64_t col = 0, tmp = 0;
    for (const rt::Instr &in : p.instrs) {
      auto [c, t] = convScratch(a, in);
      col = std::max(col, c);
      tmp = std::max(tmp, t);
    }
    pr.convScratch = (col + tmp) * (int64_t)sizeof(float);
    if (a.device.present())
      for (const rt::Instr &in : p.instrs)
        if (rt::abi::is(in, K::Attention) ||
            rt::abi::is(in, K::AttentionGrad)) {
          std::optional<rt::abi::AttentionAttrs> at =
              rt::abi::tryAttrsOf<rt::abi::AttentionAttrs>(in);
          if (!at || in.inputs.size() < 3)
            continue;
          const rt::TensorInfo &q = a.tensors[in.inputs[0]];
          pr.attentionScratch = std::max(
              pr.attentionScratch,
              rt::attentionScratchBytes(
                  rt::attentionDims(q.shape, a.tensors[in.inputs[1]].shape,
                                    a.tensors[in.inputs[2]].shape, *at),
                  q.dtype, rt::attentionWritesColumnSums(in)));
        }
    r.programs.push_back(pr);
  }
  return r;
}

const MemoryReport::Program *MemoryReport::find(const std::string &name) const {
  for (const Program &p : programs)
    if (p.name == name)
      return &p;
  return nullptr;
}

std::vector<std::string> MemoryReport::trainingPrograms() const {
  std::vector<std::string> names;
  for (const char *n : {"accumulate", "train_step"})
    if (find(n))
      names.push_back(n);
  return names;
}

int64_t MemoryReport::scratch(const std::vector<std::string> &names) const {
  // Each unfold buffer grows to the largest request of any program run.
  int64_t most = 0;
  for (const std::string &n : names)
    if (const Program *p = find(n))
      most = std::max({most, p->convScratch, p->attentionScratch});
  return most;
}

int64_t
MemoryReport::predictedPeak(const std::vector<std::string> &names) const {
  return persistent() + sharedArena() + scratch(names);
}

int64_t MemoryReport::sharedArena() const {
  int64_t most = 0;
  for (const Program &p : programs)
    most = std::max(most, p.arena);
  return most;
}

void tcc::printMemoryReport(const MemoryReport &r, std::ostream &os) {
  auto line = [&](const char *what, int64_t bytes, const char *note) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "  %-22s ", what);
    os << buf << formatBytesExact(bytes);
    if (*note)
      os << "  " << note;
    os << "\n";
  };
  std::vector<std::string> training = r.trainingPrograms();
  os << "memory anatomy (predicted, compiled session):\n";
  line("weights", r.weights, "parameters");
  if (r.weightCopies)
    line("16-bit weight copies", r.weightCopies,
         "written by the optimizer for the next step's GEMMs");
  line("optimizer state", r.optimizerState,
       "read and written by the optimizer");
  if (r.gradAccumulators)
    line("gradient accumulators", r.gradAccumulators, "persistent gradients");
  line("other state", r.otherState, "running statistics, step counters");
  line("inputs", r.inputs, "one batch");
  line("constants", r.constants, "");
  for (const MemoryReport::Program &p : r.programs) {
    os << "  program " << p.name << ":\n";
    line("  arena", p.arena, "its temporaries as planned");
    line("  live peak", p.livePeak, "lower bound of the arena");
    line("  no planning", p.sumOfTemps, "every temporary its own bytes");
    os << "    at the live peak (instr " << p.peakInstr << " of " << p.numInstrs
       << "):\n";
    line("    activations", p.activations,
         "computed before the loss, read after");
    line("    gradients", p.gradients, "fed to an optimizer update");
    line("    temporaries", p.temporaries, "everything else");
    if (p.savedActivations)
      line("  saved activations", p.savedActivations,
           "total, all live at the loss");
    if (p.gradientTotal)
      line("  gradients total", p.gradientTotal, "");
  }
  if (!training.empty()) {
    line("kernel scratch", r.scratch(training),
         "convolution unfold buffers; with GPU code, attention scratch");
    line("shared arena", r.sharedArena(),
         "the largest program's: the programs run one at a time");
    const char *note = "persistent + shared arena + scratch (training step)";
    line("predicted peak", r.predictedPeak(training), note);
  }
}

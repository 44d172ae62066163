//===- Trace.h - A timeline a person can open in Perfetto -------*- C++ -*-===//
//
// `--trace FILE` (tcc train, tcc bench, tcc-run train/bench) records what a
// run did and when into a Tracer, which writes it as Chrome's JSON Trace
// Event Format (ui.perfetto.dev and chrome://tracing open it): complete
// ("X") spans with microsecond timestamps, counters ("C") and metadata
// naming the tracks.
//
// Process 1 (the run): on the host thread, each step's span holds its
// program runs, each run its kernels (the profile's label, with the
// instr's operands, bytes and FLOPs from KernelCost.h in the args), and
// around them the host copies, the waits on the data feeder, checkpoint
// writes, non-finite scans and evaluation passes. An asynchronous backend
// (CUDA) times its launches on the host; its kernels' device times
// (events) go on a second track. Process 2 (the arena) holds the memory
// timeline: counters of the arena's live bytes and of the highest byte in
// use at each kernel, and one span per temporary from the kernel that
// writes it first to the one that reads it last, with its offset and size,
// on lanes where no two overlap. Lifetimes come from the program's instrs
// and offsets from the compiler's static plan (TensorInfo::arenaOffset), so
// the live counter peaks at the plan's live peak (`tcc compile --report`)
// and the extent at the program's arena.
//
// Off, a session holds a null Tracer and pays one branch per program run
// or copy. On, only the first `steps` steps (and what comes before them)
// are recorded in detail; later only rare spans (checkpoints, evaluations,
// scans) are, at most kMaxRareEvents, so memory stays bounded. The file is
// written with writeFileAtomically.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CORE_TRACE_H
#define TCC_RUNTIME_CORE_TRACE_H

#include "runtime/core/Artifact.h"
#include "runtime/core/KernelCost.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tcc::rt {

/// One key of an event's args: a number or a string.
struct TraceArg {
  std::string key;
  std::string text;
  double number = 0;
  bool isNumber = false;
};
inline TraceArg traceArg(std::string key, double v) {
  return {std::move(key), {}, v, true};
}
inline TraceArg traceArg(std::string key, std::string v) {
  return {std::move(key), std::move(v), 0, false};
}
using TraceArgs = std::vector<TraceArg>;

/// A temporary's life in one program: instrs [first, last] (last =
/// instrs.size() for a program output, which outlives the run), its arena
/// offset (-1 in eager mode) and its bytes (64-aligned in the arena, as
/// planned), and the lane it is drawn on.
struct TraceTensorLife {
  int32_t id = -1;
  int64_t first = 0, last = 0, offset = -1, bytes = 0;
  int32_t lane = 0;
};

/// What the memory track of one program shows, computed once per program.
struct ProgramMemoryTimeline {
  std::vector<TraceTensorLife> tensors; // in order of first write
  /// Per instr, and one more entry for after the run (the outputs): the
  /// bytes of live temporaries (compiled: the union of their arena ranges,
  /// so views and in-place results count once) and the highest arena byte
  /// in use (compiled only; 0 in eager mode).
  std::vector<int64_t> liveBytes, extentBytes;
  int64_t livePeak = 0, extentPeak = 0;
  int32_t lanes = 0;
};
ProgramMemoryTimeline programMemoryTimeline(const Program &p,
                                            const std::vector<TensorInfo> &t,
                                            bool compiled);

class Tracer {
public:
  using Clock = std::chrono::steady_clock;
  /// Tracks of process 1.
  static constexpr int32_t kHostTid = 1, kDeviceTid = 2;
  /// Spans kept after the detailed steps (checkpoints, evaluations).
  static constexpr int64_t kMaxRareEvents = 10000;

  /// `steps` (>= 1): how many steps are recorded in detail. `process`
  /// names process 1 ("tcc train (cpu)").
  explicit Tracer(int64_t steps, std::string process = "tcc");

  /// Whether kernels, copies and feeder waits are being recorded: from the
  /// start until the last detailed step ends.
  bool detailed() const { return detailed_; }
  /// Step spans (beginStep/endStep pairs; nested spans go between).
  void beginStep(int64_t step);
  void endStep();
  /// A span on `tid`. Recorded while detailed(), or, `rare`, always (up to
  /// kMaxRareEvents).
  void span(const char *cat, std::string name, Clock::time_point t0,
            Clock::time_point t1, TraceArgs args = {}, bool rare = false,
            int32_t tid = kHostTid);
  /// One run of `p` (call while detailed()): kernel i ran from starts[i] to
  /// ends[i] on the host (an asynchronous backend: its launch), labelled
  /// labels[i] (KernelCost.h's profileLabel) with costs[i]. `deviceUs`,
  /// when not empty, holds each kernel's device start and duration in
  /// microseconds from the first kernel's start (-1: not timed), drawn on
  /// the device track from the first launch on. Adds the memory track.
  void programRun(const Program &p, const std::vector<TensorInfo> &tensors,
                  bool compiled, const std::vector<std::string> &labels,
                  const std::vector<KernelCost> &costs,
                  const std::vector<Clock::time_point> &starts,
                  const std::vector<Clock::time_point> &ends,
                  const std::vector<std::pair<double, double>> &deviceUs = {});
  /// Free-form facts for the file's metadata (device, artifact).
  void note(const std::string &key, const std::string &value);

  /// Steps recorded in detail so far, events held, events dropped.
  int64_t detailedSteps() const { return tracedSteps_; }
  size_t events() const;
  /// Throws Error "--trace PATH: cannot write ..." when `path` cannot be
  /// written (checked before a run, so it does not fail at its end).
  static void checkWritable(const std::string &path);
  /// The JSON trace, sorted by time.
  std::string json() const;
  /// json() into `path`, atomically (AtomicFile.h). Throws Error.
  void write(const std::string &path) const;

private:
  struct Event {
    char ph = 'X';
    int32_t pid = 1, tid = kHostTid;
    int64_t ts = 0, dur = 0; // ns from the tracer's start
    const char *cat = "";
    std::string name;
    TraceArgs args;
  };
  int64_t ns(Clock::time_point t) const;
  void add(Event e, bool rare);
  const ProgramMemoryTimeline &
  timeline(const Program &p, const std::vector<TensorInfo> &t, bool compiled);

  Clock::time_point origin_;
  std::string process_;
  int64_t maxSteps_;
  int64_t tracedSteps_ = 0, rareEvents_ = 0, dropped_ = 0;
  std::atomic<bool> detailed_{true};
  bool inStep_ = false;
  int64_t step_ = 0;
  Clock::time_point stepStart_{};
  int32_t lanes_ = 0; // lanes of process 2 named so far
  bool deviceTrack_ = false;
  mutable std::mutex mu_; // the feeder's thread may add spans too
  std::vector<Event> events_;
  std::map<std::string, ProgramMemoryTimeline> timelines_;
  std::vector<std::pair<std::string, std::string>> notes_;
};

/// A span from construction to destruction when `t` is set and detailed()
/// (or, `rare`, always): one branch when tracing is off. Name and args may
/// be set after construction, only when active().
class TraceScope {
public:
  TraceScope(Tracer *t, const char *cat, bool rare = false)
      : t_(t && (rare || t->detailed()) ? t : nullptr), cat_(cat), rare_(rare) {
    if (t_)
      t0_ = Tracer::Clock::now();
  }
  ~TraceScope() {
    if (!t_)
      return;
    try {
      t_->span(cat_, std::move(name_), t0_, Tracer::Clock::now(),
               std::move(args_), rare_);
    } catch (...) { // a trace never ends a run
    }
  }
  TraceScope(const TraceScope &) = delete;
  TraceScope &operator=(const TraceScope &) = delete;
  bool active() const { return t_ != nullptr; }
  TraceScope &name(std::string n) {
    name_ = std::move(n);
    return *this;
  }
  TraceScope &arg(TraceArg a) {
    args_.push_back(std::move(a));
    return *this;
  }

private:
  Tracer *t_;
  const char *cat_;
  bool rare_;
  Tracer::Clock::time_point t0_{};
  std::string name_;
  TraceArgs args_;
};

} // namespace tcc::rt

#endif // TCC_RUNTIME_CORE_TRACE_H

//===- Trace.cpp - Recording and writing a Perfetto timeline --------------===//
#include "runtime/core/Trace.h"

#include "runtime/core/AtomicFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

using namespace tcc::rt;

static int64_t alignUp(int64_t v) { return (v + 63) / 64 * 64; }

ProgramMemoryTimeline tcc::rt::programMemoryTimeline(
    const Program &p, const std::vector<TensorInfo> &t, bool compiled) {
  const int64_t n = static_cast<int64_t>(p.instrs.size());
  std::vector<int64_t> first(t.size(), -1), last(t.size(), -1);
  auto isTemp = [&](int32_t id) { return t[id].kind == TensorKind::Temp; };
  // As the planner sees lifetimes (compiler/codegen/MemoryPlanner.cpp): from
  // the first write to the last read or write; outputs outlive the run.
  for (int64_t i = 0; i < n; ++i) {
    const Instr &in = p.instrs[i];
    for (int32_t id : in.inputs)
      if (isTemp(id))
        last[id] = std::max(last[id], i);
    for (int32_t id : in.outputs)
      if (isTemp(id)) {
        if (first[id] < 0)
          first[id] = i;
        last[id] = std::max(last[id], i);
      }
  }
  for (int32_t id : p.outputs)
    if (isTemp(id))
      last[id] = n;

  ProgramMemoryTimeline tl;
  for (size_t id = 0; id < t.size(); ++id) {
    if (first[id] < 0)
      continue;
    TraceTensorLife l;
    l.id = static_cast<int32_t>(id);
    l.first = first[id];
    l.last = last[id];
    l.offset = compiled ? t[id].arenaOffset : -1;
    l.bytes = compiled ? alignUp(std::max<int64_t>(t[id].byteSize(), 1))
                       : t[id].byteSize();
    tl.tensors.push_back(l);
  }
  std::stable_sort(tl.tensors.begin(), tl.tensors.end(),
                   [](const TraceTensorLife &a, const TraceTensorLife &b) {
                     return a.first < b.first;
                   });
  // Lanes: the lowest one whose last tensor died before this one is born.
  std::vector<int64_t> laneEnd;
  for (TraceTensorLife &l : tl.tensors) {
    size_t k = 0;
    while (k < laneEnd.size() && laneEnd[k] >= l.first)
      ++k;
    if (k == laneEnd.size())
      laneEnd.push_back(0);
    laneEnd[k] = l.last;
    l.lane = static_cast<int32_t>(k);
  }
  tl.lanes = static_cast<int32_t>(laneEnd.size());

  // Live bytes per instr. Compiled temps that share bytes (a view, an
  // in-place result over its dying input) count once: the union of the
  // live ranges, as the arena holds them.
  tl.liveBytes.assign(n + 1, 0);
  tl.extentBytes.assign(n + 1, 0);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t i = 0; i <= n; ++i) {
    ranges.clear();
    int64_t sum = 0;
    for (const TraceTensorLife &l : tl.tensors) {
      if (l.first > i)
        break;
      if (l.last < i || (i == n && l.last != n))
        continue;
      sum += l.bytes;
      if (compiled)
        ranges.push_back({l.offset, l.offset + l.bytes});
    }
    if (compiled) {
      std::sort(ranges.begin(), ranges.end());
      int64_t live = 0, end = -1, extent = 0;
      for (auto [b, e] : ranges) {
        if (b > end) {
          live += e - b;
          end = e;
        } else if (e > end) {
          live += e - end;
          end = e;
        }
        extent = std::max(extent, e);
      }
      tl.liveBytes[i] = live;
      tl.extentBytes[i] = extent;
    } else {
      tl.liveBytes[i] = sum;
    }
    tl.livePeak = std::max(tl.livePeak, tl.liveBytes[i]);
    tl.extentPeak = std::max(tl.extentPeak, tl.extentBytes[i]);
  }
  return tl;
}

Tracer::Tracer(int64_t steps, std::string process)
    : origin_(Clock::now()), process_(std::move(process)),
      maxSteps_(std::max<int64_t>(steps, 1)) {}

int64_t Tracer::ns(Clock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin_)
      .count();
}

void Tracer::add(Event e, bool rare) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!detailed_) {
    if (!rare)
      return;
    if (rareEvents_ >= kMaxRareEvents) {
      ++dropped_;
      return;
    }
    ++rareEvents_;
  }
  events_.push_back(std::move(e));
}

void Tracer::beginStep(int64_t step) {
  if (tracedSteps_ >= maxSteps_) {
    detailed_ = false;
    return;
  }
  inStep_ = true;
  step_ = step;
  stepStart_ = Clock::now();
}

void Tracer::endStep() {
  if (!inStep_)
    return;
  inStep_ = false;
  span("step", "step " + std::to_string(step_), stepStart_, Clock::now(),
       {traceArg("step", static_cast<double>(step_))});
  if (++tracedSteps_ >= maxSteps_)
    detailed_ = false;
}

void Tracer::span(const char *cat, std::string name, Clock::time_point t0,
                  Clock::time_point t1, TraceArgs args, bool rare,
                  int32_t tid) {
  if (!rare && !detailed_)
    return;
  Event e;
  e.tid = tid;
  e.ts = ns(t0);
  e.dur = std::max<int64_t>(ns(t1) - e.ts, 0);
  e.cat = cat;
  e.name = std::move(name);
  e.args = std::move(args);
  add(std::move(e), rare);
}

void Tracer::note(const std::string &key, const std::string &value) {
  std::lock_guard<std::mutex> lock(mu_);
  notes_.push_back({key, value});
}

size_t Tracer::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

const ProgramMemoryTimeline &Tracer::timeline(const Program &p,
                                              const std::vector<TensorInfo> &t,
                                              bool compiled) {
  std::string key = p.name + (compiled ? "" : " (eager)");
  auto it = timelines_.find(key);
  if (it == timelines_.end())
    it = timelines_.emplace(key, programMemoryTimeline(p, t, compiled)).first;
  return it->second;
}

// "x f32[16,784]; w1 f32[784,1024]": the operands as a reader knows them.
static std::string operands(const std::vector<int32_t> &ids,
                            const std::vector<TensorInfo> &t) {
  std::string s;
  for (int32_t id : ids) {
    if (!s.empty())
      s += "; ";
    s += t[id].name + " " + dtypeName(t[id].dtype) + formatShape(t[id].shape);
  }
  return s;
}

void Tracer::programRun(
    const Program &p, const std::vector<TensorInfo> &t, bool compiled,
    const std::vector<std::string> &labels,
    const std::vector<KernelCost> &costs,
    const std::vector<Clock::time_point> &starts,
    const std::vector<Clock::time_point> &ends,
    const std::vector<std::pair<double, double>> &deviceUs) {
  const size_t n = p.instrs.size();
  if (!detailed_ || n == 0 || starts.size() != n || ends.size() != n)
    return;
  span("run", "run " + p.name, starts[0], ends[n - 1],
       {traceArg("program", p.name), traceArg("kernels", double(n))});
  for (size_t i = 0; i < n; ++i) {
    const Instr &in = p.instrs[i];
    TraceArgs args = {traceArg("instr", double(i)),
                      traceArg("kernel", in.kernel),
                      traceArg("inputs", operands(in.inputs, t)),
                      traceArg("outputs", operands(in.outputs, t)),
                      traceArg("bytes", double(costs[i].bytes)),
                      traceArg("flops", costs[i].flops)};
    std::string shape = profileShape(in, t);
    if (!shape.empty())
      args.push_back(traceArg("shape", shape));
    if (!deviceUs.empty() && i < deviceUs.size() && deviceUs[i].first >= 0) {
      Event d;
      d.tid = kDeviceTid;
      d.ts = ns(starts[0]) + static_cast<int64_t>(deviceUs[i].first * 1e3);
      d.dur = static_cast<int64_t>(deviceUs[i].second * 1e3);
      d.cat = "device";
      d.name = labels[i];
      d.args = args;
      add(std::move(d), false);
      deviceTrack_ = true;
    }
    span("kernel", labels[i], starts[i], ends[i], std::move(args));
  }

  // The memory track: counters where they change, then the tensors.
  const ProgramMemoryTimeline &tl = timeline(p, t, compiled);
  int64_t lastLive = -1, lastExtent = -1;
  auto counter = [&](const char *name, int64_t at, int64_t bytes) {
    Event c;
    c.ph = 'C';
    c.pid = 2;
    c.tid = 0;
    c.ts = at;
    c.cat = "memory";
    c.name = name;
    c.args = {traceArg("bytes", double(bytes))};
    add(std::move(c), false);
  };
  const char *liveName =
      compiled ? "arena live bytes" : "eager temporaries bytes";
  for (size_t i = 0; i <= n; ++i) {
    int64_t at = i < n ? ns(starts[i]) : ns(ends[n - 1]);
    if (tl.liveBytes[i] != lastLive)
      counter(liveName, at, lastLive = tl.liveBytes[i]);
    if (compiled && tl.extentBytes[i] != lastExtent)
      counter("arena in use up to", at, lastExtent = tl.extentBytes[i]);
  }
  for (const TraceTensorLife &l : tl.tensors) {
    Event e;
    e.pid = 2;
    e.tid = l.lane + 1;
    e.ts = ns(starts[l.first]);
    int64_t end =
        ns(l.last < static_cast<int64_t>(n) ? ends[l.last] : ends[n - 1]);
    e.dur = std::max<int64_t>(end - e.ts, 0);
    e.cat = "tensor";
    e.name = t[l.id].name;
    e.args = {traceArg("bytes", double(l.bytes)),
              traceArg("type", std::string(dtypeName(t[l.id].dtype)) +
                                   formatShape(t[l.id].shape)),
              traceArg("first_instr", double(l.first)),
              traceArg("last_instr", double(l.last)),
              traceArg("program", p.name)};
    if (compiled)
      e.args.push_back(traceArg("offset", double(l.offset)));
    add(std::move(e), false);
  }
  lanes_ = std::max(lanes_, tl.lanes);
}

void Tracer::checkWritable(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error("--trace " + path + ": is a directory");
  std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw Error("--trace " + path + ": cannot write " + tmp + ": " +
                std::strerror(errno));
  std::fclose(f);
  std::remove(tmp.c_str());
}

static nlohmann::json argsJson(const TraceArgs &args) {
  nlohmann::json a = nlohmann::json::object();
  for (const TraceArg &x : args)
    if (x.isNumber && x.number == std::floor(x.number) &&
        std::fabs(x.number) < 9e15) // counts and bytes read as integers
      a[x.key] = static_cast<int64_t>(x.number);
    else if (x.isNumber)
      a[x.key] = x.number;
    else
      a[x.key] = x.text;
  return a;
}

std::string Tracer::json() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const Event *> order;
  order.reserve(events_.size());
  for (const Event &e : events_)
    order.push_back(&e);
  // By time, the longer span first, so a parent precedes what it holds.
  std::stable_sort(order.begin(), order.end(),
                   [](const Event *a, const Event *b) {
                     return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur;
                   });
  using nlohmann::json;
  std::string out = "{\"traceEvents\":[\n";
  bool firstEvent = true;
  auto put = [&](const json &j) {
    out += (firstEvent ? "" : ",\n") +
           j.dump(-1, ' ', false, json::error_handler_t::replace);
    firstEvent = false;
  };
  auto meta = [&](const char *what, int32_t pid, int32_t tid,
                  const std::string &name) {
    json m = {{"ph", "M"},
              {"pid", pid},
              {"tid", tid},
              {"name", what},
              {"args", {{"name", name}}}};
    put(m);
  };
  meta("process_name", 1, 0, process_);
  meta("thread_name", 1, kHostTid, "host");
  if (deviceTrack_)
    meta("thread_name", 1, kDeviceTid, "device (event times)");
  meta("process_name", 2, 0, "arena (static memory plan)");
  for (int32_t k = 0; k < lanes_; ++k)
    meta("thread_name", 2, k + 1, "tensors, lane " + std::to_string(k));
  for (const Event *e : order) {
    json j = {
        {"ph", std::string(1, e->ph)}, {"pid", e->pid}, {"tid", e->tid},
        {"ts", e->ts / 1e3},           {"cat", e->cat}, {"name", e->name}};
    if (e->ph == 'X')
      j["dur"] = e->dur / 1e3;
    if (!e->args.empty())
      j["args"] = argsJson(e->args);
    put(j);
  }
  json other = json::object();
  for (const auto &[k, v] : notes_)
    other[k] = v;
  other["detailed_steps"] = tracedSteps_;
  other["dropped_events"] = dropped_;
  out += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":" + other.dump() + "}\n";
  return out;
}

void Tracer::write(const std::string &path) const {
  std::string s = json();
  writeFileAtomically(path, s.data(), s.size());
}

"""Checks a `--trace` file (Chrome/Perfetto JSON) against the compile report.

usage: check_trace.py TRACE REPORT STEPS [--checkpoint-steps 3,6] [--eval]

Step spans hold kernel spans (same track, inside their time); the memory
counters peak at train_step's live peak and arena from `tcc compile
--report`; every temporary lies inside the arena; feeder waits, copies,
checkpoints and evaluations appear. Prints a short summary, exits non-zero
with the first failure.
"""
import collections
import json
import re
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def report_bytes(path, program):
    text = open(path).read()
    m = re.search(r"program %s:\n\s+arena\s.*?\((\d+) bytes\).*\n\s+live peak\s.*?\((\d+) bytes\)"
                  % program, text)
    if not m:
        fail("no arena/live peak for %s in %s" % (program, path))
    return int(m.group(1)), int(m.group(2))


def inside(a, b):
    return (a["pid"] == b["pid"] and a["tid"] == b["tid"] and a["ts"] >= b["ts"]
            and a["ts"] + a["dur"] <= b["ts"] + b["dur"] + 1e-3)


def main():
    args = sys.argv[1:]
    trace_path, report_path, steps = args[0], args[1], int(args[2])
    ckpt = []
    if "--checkpoint-steps" in args:
        ckpt = [int(s) for s in args[args.index("--checkpoint-steps") + 1].split(",")]
    want_eval = "--eval" in args
    with open(trace_path) as f:
        trace = json.load(f)  # valid JSON, or this raises
    events = trace["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    by_cat = collections.defaultdict(list)
    for e in spans:
        by_cat[e["cat"]].append(e)

    step_spans = by_cat["step"]
    names = sorted(e["name"] for e in step_spans)
    if names != sorted("step %d" % i for i in range(1, steps + 1)):
        fail("step spans %s, expected steps 1..%d" % (names, steps))
    runs = [e for e in by_cat["run"] if e["name"] == "run train_step"]
    if len(runs) != steps:
        fail("%d train_step runs traced, expected %d" % (len(runs), steps))
    for st in step_spans:
        ks = [k for k in by_cat["kernel"] if inside(k, st)]
        if not ks:
            fail("%s holds no kernel span" % st["name"])
    for k in by_cat["kernel"]:
        if not any(inside(k, st) for st in step_spans):
            fail("kernel %s at %s is in no step" % (k["name"], k["ts"]))
        if not any(inside(k, r) for r in by_cat["run"]):
            fail("kernel %s at %s is in no program run" % (k["name"], k["ts"]))
        for key in ("bytes", "flops", "inputs", "outputs", "instr"):
            if key not in k["args"]:
                fail("kernel %s lacks args.%s" % (k["name"], key))
    matmuls = [k for k in by_cat["kernel"] if k["name"] == "matmul"]
    if not matmuls or not all(k["args"]["flops"] > 0 and "shape" in k["args"] for k in matmuls):
        fail("matmul spans without FLOPs or shape")

    arena, live_peak = report_bytes(report_path, "train_step")
    counters = collections.defaultdict(list)
    for e in events:
        if e["ph"] == "C":
            counters[e["name"]].append(e["args"]["bytes"])
    if max(counters["arena live bytes"]) != live_peak:
        fail("live counter peaks at %d, the plan's live peak is %d"
             % (max(counters["arena live bytes"]), live_peak))
    if max(counters["arena in use up to"]) != arena:
        fail("extent counter peaks at %d, the arena is %d"
             % (max(counters["arena in use up to"]), arena))
    tensors = by_cat["tensor"]
    if not tensors:
        fail("no tensor lifetimes")
    for t in tensors:
        a = t["args"]
        if a["program"] == "train_step" and a["offset"] + a["bytes"] > arena:
            fail("tensor %s ends past the arena" % t["name"])

    feeder = [e for e in by_cat["feeder"] if e["name"] == "feeder wait"]
    if len(feeder) < steps:
        fail("%d feeder waits for %d steps" % (len(feeder), steps))
    uploads = [e for e in by_cat["copy"] if e["name"].startswith("upload ")]
    if not uploads:
        fail("no host copies")
    got = sorted(e["args"]["step"] for e in by_cat["checkpoint"])
    if got != ckpt:
        fail("checkpoint spans at steps %s, expected %s" % (got, ckpt))
    if want_eval and not by_cat["eval"]:
        fail("no evaluation span")
    meta = {(e["pid"], e["name"]) for e in events if e["ph"] == "M"}
    if (1, "process_name") not in meta or (2, "process_name") not in meta:
        fail("processes are not named")
    print("trace ok: %d steps, %d kernels, %d tensors, %d feeder waits, "
          "%d checkpoints, %d evaluations, live peak %d, arena %d"
          % (len(step_spans), len(by_cat["kernel"]), len(tensors), len(feeder),
             len(by_cat["checkpoint"]), len(by_cat["eval"]), live_peak, arena))


if __name__ == "__main__":
    main()

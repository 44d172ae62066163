#!/usr/bin/python3
"""How much of a sharded step's communication the compute thread waits for.

The GPT example (examples/make_gpt.py) is compiled with --data-parallel
--zero-shards 2 (AdamW) and trained under `mpirun -np 2` with --trace; from
rank 0's trace, for each detailed step after the first, the time the
schedule spends in the sharded collectives' kernels: reduce_scatter and
all_gather (with asynchronous buckets only their packing; blocking, the
whole collective), shard_wait (what is left of a bucket when its first
reader comes) and sharded_global_norm, against the step's time. Run it
with two builds (--tcc A --tcc B) to compare them; rounds alternate the
builds, so drift in the machine's load hits both alike.

    benchmarks/zero_overlap.py --tcc build/tools/tcc/tcc \\
        [--tcc ../main/build/tools/tcc/tcc] --examples examples \\
        --work /tmp/zero_overlap [--batch 4] [--steps 8] [--rounds 3] \\
        [--bucket-mb 0.25]
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

COMM = ("reduce_scatter", "all_gather", "shard_wait", "sharded_global_norm")


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def step_times(trace_path):
    """[(step ms, {kernel: ms})] for the detailed steps after the first."""
    with open(trace_path) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "step" and "dur" in e)
    kernels = [e for e in events if e.get("cat") == "kernel" and "dur" in e]
    out = []
    for begin, end in steps[1:]:
        per = collections.Counter()
        for e in kernels:
            if begin <= e["ts"] < end:
                name = e.get("args", {}).get("kernel", e["name"])
                if name in COMM:
                    per[name] += e["dur"] / 1e3
        if per:
            out.append(((end - begin) / 1e3, per))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tcc", action="append", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--batch", type=int, default=4, help="per rank")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bucket-mb", default="",
                    help="tcc compile --bucket-mb (several buckets overlap)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "gpt.onnx")
    if not os.path.exists(model):
        run(["/usr/bin/python3", os.path.join(args.examples, "make_gpt.py"),
             "-o", model])
    arts = []
    for i, tcc in enumerate(args.tcc):
        art = os.path.join(args.work, f"gpt_zero_{i}.tcc")
        run([tcc, "compile", model, "-o", art, "--batch", str(args.batch),
             "--freeze", "mask", "--optimizer", "adamw", "--data-parallel",
             "--zero-shards", "2"] +
            (["--bucket-mb", args.bucket_mb] if args.bucket_mb else []))
        arts.append(art)
    mpirun = ["mpirun", "-np", "2", "--oversubscribe"]
    if os.geteuid() == 0:
        mpirun.append("--allow-run-as-root")
    env = {k: v for k, v in os.environ.items() if k != "TCC_NUM_THREADS"}
    got = [[] for _ in args.tcc]
    for r in range(args.rounds):
        for i, tcc in enumerate(args.tcc):
            trace = os.path.join(args.work, f"trace_{i}.json")
            run(mpirun + [tcc, "train", arts[i], "--tokens",
                          os.path.join(args.examples, "text", "licenses.txt"),
                          "--steps", str(args.steps), "--no-progress",
                          "--trace", trace, "--trace-steps",
                          str(args.steps)], env)
            for step, per in step_times(trace):
                got[i].append((step, per))
            print(f"round {r + 1}: {tcc}: {len(got[i])} steps so far",
                  flush=True)
    for i, tcc in enumerate(args.tcc):
        steps = got[i]
        if not steps:
            sys.exit(f"{tcc}: no traced steps with sharded collectives")
        med = statistics.median(s for s, _ in steps)
        comm = statistics.median(sum(p.values()) for _, p in steps)
        print(f"{tcc}: median step {med:.2f} ms, of it in the collectives' "
              f"kernels {comm:.2f} ms ({len(steps)} steps)")
        for k in COMM:
            v = [p[k] for _, p in steps]
            print(f"    {k:20s} median {statistics.median(v):7.3f} ms")


if __name__ == "__main__":
    main()

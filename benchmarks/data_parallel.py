#!/usr/bin/python3
"""Throughput of 2 ranks x 1 thread against 1 rank x 2 threads.

The GPT example (examples/make_gpt.py: d=128, 4 heads, 2 layers, T=64) is
compiled at batch B for one process with TCC_NUM_THREADS=2 and at batch B/2
with --data-parallel for `mpirun -np 2` (each rank one thread); both train
on the bundled text for --steps steps, with a third run for reference (the
B/2 artifact in one process, one thread: what 2 ranks would double if the
gradient averaging were free), in interleaved rounds (one of each per
round, so drift in the machine's load hits all alike). Reported per round: the summary line's
global samples/s (from the median step) and the wall time of the command.

    benchmarks/data_parallel.py --tcc build/tools/tcc/tcc --examples examples \\
        --work /tmp/dp_bench [--batch 8] [--steps 40] [--rounds 3] [--zero]

--zero adds 2 ranks x 1 thread with the optimizer state sharded
(--zero-shards 2: reduce-scatter and all-gather buckets instead of the
all-reduce's).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time


def run(cmd, env=None):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--batch", type=int, default=8, help="global batch")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--zero", action="store_true",
                    help="also 2 ranks x 1 thread with --zero-shards 2")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "gpt.onnx")
    if not os.path.exists(model):
        run(["/usr/bin/python3", os.path.join(args.examples, "make_gpt.py"),
             "-o", model])
    arts = {}
    configs = [("one", args.batch, []),
               ("two", args.batch // 2, ["--data-parallel"])]
    if args.zero:
        configs.append(("zero", args.batch // 2,
                        ["--data-parallel", "--zero-shards", "2"]))
    for tag, b, dp in configs:
        arts[tag] = os.path.join(args.work, f"gpt_b{b}_{tag}.tcc")
        run([args.tcc, "compile", model, "-o", arts[tag], "--batch", str(b),
             "--freeze", "mask", "--optimizer", "adamw"] + dp)
    train = ["train", "--tokens",
             os.path.join(args.examples, "text", "licenses.txt"), "--steps",
             str(args.steps), "--no-progress"]
    mpirun = ["mpirun", "-np", "2", "--oversubscribe"]
    if os.geteuid() == 0:
        mpirun.append("--allow-run-as-root")
    env1 = dict(os.environ, TCC_NUM_THREADS="2")
    env2 = {k: v for k, v in os.environ.items() if k != "TCC_NUM_THREADS"}
    rate = re.compile(r"median step ([\d.]+) ms, (\d+) samples/s")
    # The third: one rank of the two alone (1 thread, batch B/2), what the
    # pair would double if averaging the gradients cost nothing.
    arts["half"] = arts["two"]
    names = {"one": "1 rank x 2 threads, batch %d" % args.batch,
             "two": "2 ranks x 1 thread, 2 x %d" % (args.batch // 2),
             "half": "1 rank x 1 thread, batch %d" % (args.batch // 2),
             "zero": "2 ranks x 1 thread, 2 x %d, --zero-shards 2" %
                     (args.batch // 2)}
    envs = {"one": env1, "two": env2, "zero": env2,
            "half": dict(os.environ, TCC_NUM_THREADS="1")}
    tags = ["one", "two", "half"] + (["zero"] if args.zero else [])
    got = {tag: [] for tag in tags}
    for r in range(args.rounds):
        for tag in tags:
            cmd = [args.tcc, train[0], arts[tag]] + train[1:]
            if tag in ("two", "zero"):
                cmd = mpirun + cmd
            out, wall = run(cmd, envs[tag])
            m = rate.search(out)
            if not m:
                sys.exit("no summary line:\n" + out)
            got[tag].append((float(m.group(2)), float(m.group(1)), wall))
            print(f"round {r + 1}: {names[tag]}: {m.group(2)} samples/s "
                  f"(median step {m.group(1)} ms), command {wall:.2f} s",
                  flush=True)
    for tag in tags:
        sps = statistics.median(x[0] for x in got[tag])
        print(f"median {names[tag]}: {sps:.0f} samples/s")


if __name__ == "__main__":
    main()

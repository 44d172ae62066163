#!/usr/bin/python3
"""Cut cross-entropy on and off: predicted peak memory and CPU step time.

For each ONNX token model given (examples/make_gpt.py's GPT, or a GPT-2-small
shaped CharGPT exported the same way), compiles two artifacts that differ
only in --no-cut-ce, prints `tcc compile --report`'s predicted arena and
peak, then trains both on the bundled text (--tokens) in interleaved rounds
(on, off, on, off, ...) and reports the median step time of each (first two
steps of every run dropped) and their ratio: the machine is shared, so only
ratios from one interleaved run mean anything.

  /usr/bin/python3 benchmarks/cut_cross_entropy.py --tcc build/tools/tcc/tcc \\
      --model gpt=/tmp/gpt.onnx:16 --model gpt2s=/tmp/gpt2s.onnx:4 \\
      --corpus examples/text/licenses.txt --work /tmp/cce
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--model", action="append", required=True,
                    help="NAME=PATH.onnx:BATCH")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    for spec in args.model:
        name, rest = spec.split("=", 1)
        path, batch = rest.rsplit(":", 1)
        arts = {}
        for tag, extra in (("on", []), ("off", ["--no-cut-ce"])):
            art = os.path.join(args.work, f"{name}_{tag}.tcc")
            out = run([args.tcc, "compile", path, "-o", art, "--batch", batch,
                       "--freeze", "mask", "--optimizer", "adamw",
                       "--weights", "seeded", "--report"] + extra)
            arts[tag] = art
            lines = [l for l in out.splitlines()
                     if re.search(r"cut cross-entropy|arena|peak|activations"
                                  r"|temporaries", l, re.I)]
            print(f"== {name} batch {batch} cut-ce {tag}")
            print("\n".join("   " + l for l in lines))
        times = {"on": [], "off": []}
        for r in range(args.rounds):
            for tag in ("on", "off"):
                m = os.path.join(args.work, f"{name}_{tag}_{r}.jsonl")
                run([args.tcc, "train", arts[tag], "--tokens", args.corpus,
                     "--steps", str(args.steps), "--no-progress",
                     "--metrics", m])
                ms = [json.loads(l)["step_ms"] for l in open(m)]
                times[tag] += ms[2:]
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        print(f"== {name}: median step {on:.1f} ms with cut-ce, {off:.1f} ms "
              f"without: off/on = {off / on:.3f} ({args.rounds} interleaved "
              f"rounds x {args.steps - 2} steps)")


if __name__ == "__main__":
    main()

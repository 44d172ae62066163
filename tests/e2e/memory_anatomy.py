#!/usr/bin/python3
"""The compiler's memory prediction against what the runtime measures.

For an MLP (784-256-256-10, batch 64, AdamW) and the GPT-style model of
examples/make_gpt.py (batch 4), `tcc compile --report` predicts the peak of a
compiled training session (persistent tensors + arena + kernel scratch);
`tcc bench --only compiled` measures the session's allocations including the
kernels' scratch. They must agree within 10%. Also checked: the compiled
step holds no more than the eager one (same artifact, a buffer per
temporary), and planning (tcc-plan-memory + arena reuse) gives a smaller
arena than --no-plan-memory. The process RSS growth is printed for the
record (it also holds OpenBLAS's buffers and code, which no plan covers).
"""
import argparse
import os
import re
import subprocess
import sys

UNITS = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, TCC_NUM_THREADS="2"))
    if p.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def size(text):
    num, unit = text.split()
    return float(num) * UNITS[unit]


def report_bytes(report, label):
    m = re.search(r"^\s*" + label + r"\s+.*?\((\d+) bytes\)", report, re.M)
    if not m:
        sys.exit(f"no '{label}' in the report:\n{report}")
    return int(m.group(1))


def check(tcc, model, work, tag, batch, extra):
    art = os.path.join(work, tag + ".tcc")
    report = run([tcc, "compile", model, "-o", art, "--batch", str(batch),
                  "--report"] + extra)
    predicted = report_bytes(report, "predicted peak")
    arena = report_bytes(report, "arena")
    run([tcc, "compile", model, "-o", art + ".noplan", "--batch", str(batch),
         "--no-plan-memory"] + extra)
    noplan = report_bytes(run([tcc, "inspect", art + ".noplan"]), "arena")

    bench = run([tcc, "bench", art, "--steps", "2", "--warmup", "1"])
    m = re.search(r"measured peak eager (\S+ \S+) compiled (\S+ \S+) .*"
                  r"peak RSS \+(\S+ \S+)", bench)
    if not m:
        sys.exit(f"no measured peak in the bench output:\n{bench}")
    eager, compiled, _ = (size(g) for g in m.groups())
    solo = run([tcc, "bench", art, "--steps", "2", "--warmup", "1",
                "--only", "compiled"])
    rss = size(re.search(r"peak RSS \+(\S+ \S+)", solo).group(1))
    print(f"{tag}: predicted {predicted / 2**20:.2f} MiB, measured compiled "
          f"{compiled / 2**20:.2f} MiB (RSS growth {rss / 2**20:.2f} MiB), "
          f"eager {eager / 2**20:.2f} MiB; arena {arena / 2**20:.2f} MiB, "
          f"--no-plan-memory {noplan / 2**20:.2f} MiB")
    # The bench rounds to 0.1 of its unit; 10% is far above that.
    if abs(compiled - predicted) > 0.10 * predicted:
        sys.exit(f"{tag}: measured {compiled} vs predicted {predicted}: "
                 "more than 10% apart")
    if compiled > eager * 1.001:
        sys.exit(f"{tag}: compiled peak {compiled} above eager {eager}")
    if not arena < noplan:
        sys.exit(f"{tag}: planned arena {arena} not below unplanned {noplan}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    mlp = os.path.join(args.work, "mlp.onnx")
    gpt = os.path.join(args.work, "gpt.onnx")
    py = sys.executable
    run([py, os.path.join(args.examples, "make_mlp.py"), "-o", mlp,
         "--sizes", "784,256,256,10"])
    run([py, os.path.join(args.examples, "make_gpt.py"), "-o", gpt])
    check(args.tcc, mlp, args.work, "mlp", 64, [])
    check(args.tcc, gpt, args.work, "gpt", 4, ["--freeze", "mask"])
    print("memory prediction within 10% of the measured peak")


if __name__ == "__main__":
    main()

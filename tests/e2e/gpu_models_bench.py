#!/usr/bin/python3
"""benchmarks/gpu_models.py end to end on the CPU, at batch 4.

The GPU benchmark of the MLP and the GPT-style model runs only where a GPU
is lent, so its script is checked here: `prepare --target cpu` exports and
compiles both, `run --device cpu --no-compile` measures PyTorch eager and
tcc. The report must have a table per model with both rows and the ratio,
each row's samples/s the batch (tokens for the GPT) over its step time; a
tcc-run that fails is a 'failed' row and exit status 1.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "benchmarks", "gpu_models.py")


def bench(args, check=True):
    p = subprocess.run([sys.executable, BENCH] + args, capture_output=True,
                       text=True)
    if check and p.returncode != 0:
        sys.exit(f"FAILED: gpu_models.py {' '.join(args)}\n{p.stdout}\n"
                 f"{p.stderr}")
    return p


def rows_of(report, model):
    """{system: (step ms, rate)} of one model's table."""
    part = report.split(f"## {model} ")[1].split("\n## ")[0]
    out = {}
    for line in part.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 4 and \
                cells[1].replace(".", "").isdigit():
            out[cells[0]] = (float(cells[1]), float(cells[2].replace(",", "")))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--tcc-run", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    batch = 4
    # ResNet-50's row is left out: at 224x224 it takes a minute on the CPU
    # (its prepare and run were checked by hand on the CPU).
    bench(["prepare", "--out", a.work, "--tcc", a.tcc, "--target", "cpu",
           "--batch", str(batch), "--models", "mlp,char-gpt"])
    out = os.path.join(a.work, "out")
    report = bench(["run", "--artifacts", a.work, "--tcc-run", a.tcc_run,
                    "--out", out, "--device", "cpu", "--no-compile",
                    "--steps", "2", "--warmup", "1"]).stdout
    with open(os.path.join(out, "models.md")) as f:
        if f.read().strip() != report.strip():
            sys.exit("FAILED: models.md is not the printed report")
    for model, per_step in (("mlp", batch), ("char-gpt", batch * 64)):
        rows = rows_of(report, model)
        if set(rows) != {"PyTorch eager", "tcc"}:
            sys.exit(f"FAILED: {model} rows {sorted(rows)}:\n{report}")
        for system, (ms, rate) in rows.items():
            if abs(rate - per_step / (ms / 1e3)) > 0.01 * rate + 1:
                sys.exit(f"FAILED: {model} {system}: {rate} a second is not "
                         f"{per_step} in {ms} ms")
    if report.count("tcc / PyTorch eager:") != 2:
        sys.exit(f"FAILED: not one ratio per model:\n{report}")

    # A runner that fails: its rows say so, and the run fails.
    broken = os.path.join(a.work, "tcc-run-broken")
    with open(broken, "w") as f:
        f.write("#!/bin/sh\necho broken >&2\nexit 3\n")
    os.chmod(broken, 0o755)
    p = bench(["run", "--artifacts", a.work, "--tcc-run", broken, "--out",
               os.path.join(a.work, "broken"), "--device", "cpu",
               "--no-compile", "--steps", "1", "--warmup", "0"], check=False)
    if p.returncode != 1 or \
            p.stdout.count("| tcc | failed (gpu_models.log) |") != 2:
        sys.exit(f"FAILED: a failing tcc-run gave status {p.returncode}:\n"
                 f"{p.stdout}\n{p.stderr}")
    # Artifacts never prepared: the error names the missing file.
    p = bench(["run", "--artifacts", os.path.join(a.work, "none"),
               "--tcc-run", a.tcc_run, "--out", os.path.join(a.work, "o2"),
               "--device", "cpu"], check=False)
    if p.returncode != 1 or "none/config.json: make ARTIFACTS with " \
            "`gpu_models.py prepare" not in p.stderr:
        sys.exit(f"FAILED: run without artifacts gave status {p.returncode}:"
                 f"\n{p.stderr}")
    # A negative batch is refused before anything is exported.
    p = bench(["prepare", "--out", os.path.join(a.work, "neg"), "--tcc",
               a.tcc, "--target", "cpu", "--batch", "-1"], check=False)
    if p.returncode != 2 or "--batch must be positive" not in p.stderr or \
            os.path.exists(os.path.join(a.work, "neg")):
        sys.exit(f"FAILED: --batch -1 gave status {p.returncode}:\n{p.stderr}")
    p = bench(["prepare", "--out", os.path.join(a.work, "bad"), "--tcc",
               a.tcc, "--target", "cpu", "--models", "mlp,vgg"], check=False)
    if p.returncode != 2 or "--models: no model 'vgg'" not in p.stderr:
        sys.exit(f"FAILED: --models vgg gave status {p.returncode}:\n{p.stderr}")
    print("gpu_models.py: both models measured on the CPU; a failing runner "
          "is reported")


if __name__ == "__main__":
    main()

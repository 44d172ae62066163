#!/usr/bin/python3
"""benchmarks/gpt2_small.py end to end on the CPU, at its tiny preset.

The GPU benchmark runs only where a GPU is lent, so its script is checked
here: `prepare` exports and compiles, `run --device cpu` measures PyTorch
eager and tcc and profiles tcc's step. The report must have both rows, a
tokens/s ratio and the profile, with roofline columns for a made-up device
(its "all" row: the bound plus the time above it is the time taken); the
profile's FLOPs are checked against the model, counted independently from
its PyTorch modules:
  * GEMMs: 6 x tokens x the weights of every Linear (and attention's fused
    input projection): the forward product, and the backward's input and
    weight gradients;
  * causal attention: per layer, head and sequence, the T (T + 1) / 2 kept
    query-key pairs, 2 (d + d) FLOPs each forward and 2 (3 d + 2 d)
    backward (the scores again, dP, dV, dQ, dK), d the head size.
"""
import argparse
import json
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
BENCH = os.path.join(ROOT, "benchmarks", "gpt2_small.py")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import gpt2_small  # noqa: E402


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--tcc-run", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    batch = 4
    run([sys.executable, BENCH, "prepare", "--out", a.work, "--tcc", a.tcc,
         "--preset", "tiny", "--batches", str(batch), "--target", "cpu"])
    out = os.path.join(a.work, "out")
    # Runner variants (as tests/gpu/prepare.sh --variant makes them): one
    # that runs tcc-run under a setting, one that fails, which its row
    # shows without failing the run.
    wrapped = os.path.join(a.work, "tcc-run-wrapped")
    broken = os.path.join(a.work, "tcc-run-broken")
    with open(wrapped, "w") as f:
        f.write(f'#!/bin/sh\nTCC_GPT2_BENCH_VARIANT=1 exec '
                f'"{os.path.abspath(a.tcc_run)}" "$@"\n')
    with open(broken, "w") as f:
        f.write("#!/bin/sh\necho broken >&2\nexit 3\n")
    for path in (wrapped, broken):
        os.chmod(path, 0o755)
    report = run([sys.executable, BENCH, "run", "--artifacts", a.work,
                  "--tcc-run", a.tcc_run, "--out", out, "--device", "cpu",
                  "--steps", "2", "--warmup", "1",
                  # A made-up device, so that the roofline columns fill.
                  "--peak-tflops", "0.2", "--bandwidth-tbs", "0.02",
                  "--tcc-variant", f"wrapped={wrapped}",
                  "--tcc-variant", f"broken={broken}"])
    for needed in ("| PyTorch eager | 4 |", "| tcc | 4 |",
                   "| tcc, wrapped | 4 |", "tcc, wrapped / tcc:",
                   # --repeats (3 by default): tcc's rows run in rounds.
                   "tcc: step ms the median of 3 runs in rounds: ",
                   "tcc, wrapped: step ms the median of 3 runs",
                   "| tcc, broken | none fits |",
                   "tcc / PyTorch eager:", "## Where tcc's step goes",
                   "MFU counts", "Roofline: 0.02 TB/s and 0.2 TFLOP/s",
                   "| roofline ms | above it ms |",
                   "| GEMMs |", "| attention |", "Slowest kernels:",
                   "GEMMs and attention by problem (most time above the "
                   "roofline first"):
        if needed not in report:
            sys.exit(f"FAILED: the report has no '{needed}':\n{report}")

    # The roofline row of all kernels: its bound is below the time taken.
    all_row = [r for r in report.splitlines() if r.startswith("| all |")]
    if len(all_row) != 1:
        sys.exit(f"FAILED: no single '| all |' row:\n{report}")
    cells = [c.strip() for c in all_row[0].strip("|").split("|")]
    took, bound, above = float(cells[2]), float(cells[6]), float(cells[7])
    if not (0 < bound and abs(took - bound - above) < 0.02):
        sys.exit(f"FAILED: roofline row {all_row[0]}")

    cfg = gpt2_small.PRESETS["tiny"]
    torch.manual_seed(0)
    model = gpt2_small.build_model(cfg)
    gemm_weights = 0
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            gemm_weights += m.weight.numel()
        if isinstance(m, torch.nn.MultiheadAttention):
            gemm_weights += m.in_proj_weight.numel()
    tokens = batch * cfg["t"]
    head = cfg["d"] // cfg["heads"]
    t = cfg["t"]
    pairs = cfg["layers"] * batch * cfg["heads"] * t * (t + 1) // 2
    want = {"matmul": 6 * tokens * gemm_weights,
            "attention": pairs * 2 * (2 * head),
            "attention_grad": pairs * 2 * (3 * head + 2 * head)}

    with open(os.path.join(out, "gpt2_small_profile.json")) as f:
        prof = json.load(f)
    steps = prof["profile_steps"]
    got, problems, cut_ce = {}, set(), False
    for k in prof["profile"]:
        name = gpt2_small.kernel_name(k["kernel"])
        if name != k["kernel"]:
            problems.add(k["kernel"])
        if name.startswith("matmul"):
            name = "matmul"
        # Cut cross-entropy: the head's product runs inside the fused loss.
        if name.startswith("linear_cross_entropy"):
            cut_ce = True
            name = "matmul"
        got[name] = got.get(name, 0) + k["flops"] / steps
        if k["flops"] == 0 and k["bytes"] <= 0 and name not in ("copy",):
            sys.exit(f"FAILED: {k['kernel']} moves no bytes")
    # The benchmark's MFU numerator: its N must be the GEMMs' weights plus
    # the vectors (biases, layer norms), no embedding.
    with open(os.path.join(a.work, "config.json")) as f:
        conf = json.load(f)
    vectors = sum(p.numel() for p in model.parameters() if p.dim() == 1)
    if conf["flop_params"] != gemm_weights + vectors:
        sys.exit(f"FAILED: the benchmark counts N = {conf['flop_params']}, "
                 f"the GEMMs' weights are {gemm_weights} and the vectors "
                 f"{vectors}")
    # By problem: the forward's input projection (the first of every
    # layer's products) and causal attention of the preset's shape.
    d, heads = cfg["d"], cfg["heads"]
    qkv = f"[{batch}x{t}x{3 * d}] k{d}"
    att = f"attention b{batch * heads} t{t}x{t} d{head} causal"
    for shape in (qkv, att):
        if not any(p.endswith(shape) for p in problems):
            sys.exit(f"FAILED: no profile entry for {shape}: {problems}")
    # With cut cross-entropy the gradient recomputes the head's logits:
    # one more forward product, 2 tokens d vocab.
    if cut_ce:
        want["matmul"] += 2 * tokens * cfg["d"] * cfg["vocab"]
    for name, flops in want.items():
        if abs(got.get(name, 0) - flops) > 1e-9 * flops:
            sys.exit(f"FAILED: {name}: the profile counts {got.get(name)} "
                     f"FLOPs per step, the model {flops}")
        print(f"{name}: {flops:.4g} FLOPs per step, as the model counts")
    # Artifacts that are not JSON: the error names the file and the fault.
    bad = os.path.join(a.work, "bad")
    os.makedirs(bad, exist_ok=True)
    with open(os.path.join(bad, "config.json"), "w") as f:
        f.write("{not json")
    p = subprocess.run([sys.executable, BENCH, "run", "--artifacts", bad,
                        "--tcc-run", a.tcc_run, "--out",
                        os.path.join(a.work, "bad_out"), "--device", "cpu"],
                       capture_output=True, text=True)
    if p.returncode != 1 or "bad/config.json: Expecting property name" \
            not in p.stderr:
        sys.exit(f"FAILED: a broken config.json gave status {p.returncode}:"
                 f"\n{p.stderr}")
    print("PASSED")


if __name__ == "__main__":
    main()

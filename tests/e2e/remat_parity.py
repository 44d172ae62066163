#!/usr/bin/python3
"""Rematerialization changes memory, not results.

examples/make_gpt.py's model with dropout 0.1 (so recomputed dropouts must
reproduce their masks) is compiled without a budget and with two
--memory-budget plans, and each is trained for a few AdamW steps on the same
--no-shuffle batches:
  * half the activations (the default --recompute=all);
  * 1 byte with --recompute=all: the whole forward is recomputed after the
    loss, matmuls and the embedding included.
A 1-byte budget with --recompute=cheap must be refused with the minimum
(matmul outputs) and the activation total, which sets the budgets above.
Checks: each plan recomputes dropout (more tcc.dropout ops in @train_step),
keeps no more than its budget, and its losses and exported parameters equal
the baseline's (bit for bit is expected: the same kernels run on the same
inputs; 1e-6 relative is the bound).
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples")
BATCH, STEPS = 4, 6


def run(cmd, expect_fail=False):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if (p.returncode != 0) != expect_fail:
        sys.exit(f"command {'succeeded' if expect_fail else 'failed'}: "
                 f"{' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout + p.stderr


def compile_and_train(tcc, work, tag, onnx_path, corpus, extra):
    art = os.path.join(work, tag + ".tcc")
    common = [onnx_path, "--batch", str(BATCH), "--freeze", "mask"] + extra
    run([tcc, "compile"] + common + ["-o", art])
    ir = run([tcc, "compile"] + common + ["--emit=optimized"])
    train_step = ir[ir.index("func.func @train_step"):]
    dropouts = len(re.findall(r"= tcc\.dropout ", train_step))
    m = re.search(r"tcc.remat = \{[^}]*kept_bytes = (\d+)", train_step)
    kept = int(m.group(1)) if m else None
    metrics = os.path.join(work, tag + ".jsonl")
    out = os.path.join(work, tag + ".onnx")
    run([tcc, "train", art, "--tokens", corpus, "--steps", str(STEPS),
         "--no-shuffle", "--no-progress", "--metrics", metrics, "--export", out])
    losses = [json.loads(l)["loss"] for l in open(metrics)]
    params = {t.name: onnx.numpy_helper.to_array(t)
              for t in onnx.load(out).graph.initializer}
    return losses, params, dropouts, kept


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    onnx_path = os.path.join(args.work, "gpt_dropout.onnx")
    run(["/usr/bin/python3", os.path.join(EXAMPLES, "make_gpt.py"),
         "-o", onnx_path, "--dropout", "0.1"])

    # An unreachable budget is refused before anything runs.
    never = os.path.join(args.work, "never.tcc")
    if os.path.exists(never):
        os.remove(never)
    err = run([args.tcc, "compile", onnx_path, "--batch", str(BATCH),
               "--freeze", "mask", "--recompute", "cheap",
               "--memory-budget", "1", "-o", never], expect_fail=True)
    m = re.search(r"memory budget of 1 bytes .* is below the .* \((\d+) bytes\) "
                  r"of activations that any schedule of @train_step must keep "
                  r"\(outputs of tcc\.matmul.*activations total .* \((\d+) bytes\)",
                  err)
    if not m or os.path.exists(never):
        sys.exit(f"unexpected answer to --memory-budget 1:\n{err}")
    minimum, total = int(m.group(1)), int(m.group(2))
    print(f"activations {total} bytes; --recompute=cheap keeps at least {minimum}")
    if not 0 < minimum < total:
        sys.exit("expected 0 < minimum < total")

    base, base_params, base_drop, _ = compile_and_train(
        args.tcc, args.work, "base", onnx_path, args.corpus, [])
    plans = [("half", total // 2, "all"), ("everything", 1, "all")]
    for tag, budget, recompute in plans:
        losses, params, drop, kept = compile_and_train(
            args.tcc, args.work, tag, onnx_path, args.corpus,
            ["--memory-budget", str(budget), "--recompute", recompute])
        if kept is None or kept > budget:
            sys.exit(f"{tag}: keeps {kept} bytes of activations, budget {budget}")
        if drop <= base_drop:
            sys.exit(f"{tag}: no dropout was recomputed ({drop} tcc.dropout "
                     f"ops, {base_drop} without a budget)")
        np.testing.assert_allclose(losses, base, rtol=1e-6, atol=0,
                                   err_msg=f"{tag}: losses differ")
        worst = 0.0
        for name, p in base_params.items():
            q = params[name]
            if np.array_equal(p, q):  # the frozen causal mask holds -inf
                continue
            if not (np.isfinite(p).all() and np.isfinite(q).all()):
                sys.exit(f"{tag}: parameter {name} differs in non-finite values")
            worst = max(worst, float(np.max(np.abs(q - p))) /
                        max(float(np.max(np.abs(p))), 1e-30))
        if worst > 1e-6:
            sys.exit(f"{tag}: exported parameters differ (rel {worst:.2e})")
        exact = losses == base and worst == 0.0
        print(f"{tag}: budget {budget}, keeps {kept} of {total} bytes, "
              f"{drop - base_drop} dropout(s) recomputed; {STEPS} losses and "
              f"parameters {'bit-identical' if exact else f'within {worst:.1e}'}")
    print(f"losses: {base}")


if __name__ == "__main__":
    main()

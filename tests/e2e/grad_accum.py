#!/usr/bin/python3
"""--grad-accum K with micro-batches of B gives the update of one batch of K*B.

The example MLP is compiled twice, with --batch 32 and with --batch 8
--grad-accum 4, and trained on the same data in the same order (--no-shuffle)
with SGD+momentum and with AdamW. The per-step losses and the exported
parameters must agree to float rounding (the sums are ordered differently;
for AdamW that rounding is amplified where gradients are near zero).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def train(tcc, ex, work, tag, batch, accum, opt):
    art = os.path.join(work, f"{tag}.tcc")
    cmd = [tcc, "compile", os.path.join(ex, "mlp.onnx"), "-o", art, "--batch",
           str(batch), "--grad-accum", str(accum)] + opt
    run(cmd)
    metrics = os.path.join(work, f"{tag}.jsonl")
    out = os.path.join(work, f"{tag}.onnx")
    run([tcc, "train", art, "--steps", "12", "--no-shuffle", "--no-progress",
         "--data", "x=" + os.path.join(ex, "digits", "train_x.npy"),
         "--data", "labels=" + os.path.join(ex, "digits", "train_y.npy"),
         "--metrics", metrics, "--export", out])
    losses = [json.loads(l)["loss"] for l in open(metrics)]
    params = {t.name: onnx.numpy_helper.to_array(t)
              for t in onnx.load(out).graph.initializer}
    return losses, params


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    for name, opt in (("sgd", ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9"]),
                      ("adamw", ["--optimizer", "adamw", "--lr", "0.003"])):
        big_l, big_p = train(args.tcc, args.examples, args.work, name + "_b32", 32, 1, opt)
        acc_l, acc_p = train(args.tcc, args.examples, args.work, name + "_b8x4", 8, 4, opt)
        np.testing.assert_allclose(acc_l, big_l, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name}: losses differ")
        worst = 0.0
        for k, v in big_p.items():
            # AdamW divides by sqrt(v): where a gradient is ~0 (a dead ReLU
            # unit), summation-order rounding moves the step by up to ~lr*1e-3.
            np.testing.assert_allclose(acc_p[k], v, rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name}: parameter {k} differs")
            worst = max(worst, float(np.max(np.abs(acc_p[k] - v))))
        print(f"{name}: batch 8 x grad-accum 4 == batch 32 over 12 steps "
              f"(max abs param diff {worst:.2e})")


if __name__ == "__main__":
    main()

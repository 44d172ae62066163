#!/usr/bin/python3
"""End to end against PyTorch for the data movement of a transformer.

The models of tests/lit/frontends/onnx/Inputs/make_transformer_bits.py
(token + positional embedding on int64 ids; q/k/v split, head reshapes and a
causal mask; split/cat/slicing; nn.MultiheadAttention as PyTorch 2.x writes
it, whose compiled step must also have no transpose or gather left) are exported with torch.onnx.export, compiled
by tcc and trained for a few AdamW steps by both tcc (--no-shuffle) and
PyTorch. The per-step losses must agree (rtol 1e-4): this checks gather and
its scatter-add gradient, slice, concat, where and the folded shape
arithmetic numerically, forward and backward. A last check feeds a token id
outside the vocabulary and expects tcc train to fail naming it.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lit", "frontends", "onnx", "Inputs"))
import make_transformer_bits as bits  # noqa: E402

BATCH, SAMPLES, STEPS, LR = 4, 16, 6, 1e-2


def run(cmd, ok=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if ok and p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p


def torch_losses(model, x, y, loss):
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    losses = []
    per_epoch = SAMPLES // BATCH
    for step in range(STEPS):
        b = step % per_epoch
        xb = torch.from_numpy(x[b * BATCH:(b + 1) * BATCH])
        yb = torch.from_numpy(y[b * BATCH:(b + 1) * BATCH])
        opt.zero_grad()
        out = model(xb)
        if loss == "cross_entropy":  # classes on the last axis, as tcc
            l = nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), yb.reshape(-1))
        else:
            l = nn.functional.mse_loss(out, yb)
        l.backward()
        opt.step()
        losses.append(l.item())
    return losses


def case(tcc, work, name, model, x, y, loss, input_name, freeze=()):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    bits.export(model, torch.from_numpy(x[:2]), name, input_name, d)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)
    art = os.path.join(d, "model.tcc")
    cmd = [tcc, "compile", os.path.join(d, name + ".onnx"), "-o", art,
           "--batch", str(BATCH), "--loss", loss, "--optimizer", "adamw",
           "--lr", str(LR)]
    if freeze:
        cmd += ["--freeze", ",".join(freeze)]
    run(cmd)
    metrics = os.path.join(d, "metrics.jsonl")
    run([tcc, "train", art, "--data", f"{input_name}=" + os.path.join(d, "x.npy"),
         "--data", "labels=" + os.path.join(d, "y.npy"), "--steps", str(STEPS),
         "--no-shuffle", "--no-progress", "--metrics", metrics])
    got = [json.loads(l)["loss"] for l in open(metrics)]
    want = torch_losses(model, x, y, loss)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6,
                               err_msg=f"{name}: per-step losses differ")
    print(f"{name}: {STEPS} steps match PyTorch (final loss {got[-1]:.6f})")
    return art


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = np.random.RandomState(1)

    torch.manual_seed(0)
    ids = rng.randint(0, 50, size=(SAMPLES, 8)).astype(np.int64)
    # Repeated tokens in a batch exercise the scatter-add of gather_grad.
    ids[:, 3] = ids[:, 0]
    art = case(args.tcc, args.work, "embedding", bits.Embedding(), ids,
               rng.randint(0, 50, size=(SAMPLES, 8)).astype(np.int64),
               "cross_entropy", "ids")
    torch.manual_seed(0)
    case(args.tcc, args.work, "heads", bits.Heads(),
         rng.randn(SAMPLES, 8, 16).astype(np.float32),
         rng.randint(0, 10, size=(SAMPLES, 8)).astype(np.int64),
         "cross_entropy", "x", freeze=("mask",))
    # PyTorch 2.x's MHA graph: the same losses, and the compiled step has
    # no transpose or gather left (one fused-QKV attention, as for 1.13's).
    torch.manual_seed(0)
    mha = case(args.tcc, args.work, "packed_mha", bits.PackedMha(),
               rng.randn(SAMPLES, 8, 16).astype(np.float32),
               rng.randint(0, 10, size=(SAMPLES, 8)).astype(np.int64),
               "cross_entropy", "x", freeze=("mask",))
    sched = run([args.tcc, "compile", os.path.join(args.work, "packed_mha", "packed_mha.onnx"),
                 "--batch", str(BATCH), "--freeze", "mask", "--loss", "cross_entropy",
                 "--optimizer", "adamw", "--emit=schedule", "-o", "-"]).stdout
    program = sched.split("program forward")[0]
    left = [l.strip() for l in program.splitlines()
            if l.strip().split("= ")[-1].startswith(("transpose(", "gather("))]
    if left or "attention(" not in program:
        sys.exit("packed_mha: expected one attention and no transpose or gather "
                 "in the training step, got:\n" + "\n".join(left or [program]))
    print("packed_mha: no transpose or gather left in the step")
    torch.manual_seed(0)
    case(args.tcc, args.work, "split_cat", bits.SplitCat(),
         rng.randn(SAMPLES, 5, 6).astype(np.float32),
         rng.randn(SAMPLES, 4, 6).astype(np.float32), "mse", "x")

    # A token id outside the vocabulary stops training with a clear error.
    d = os.path.join(args.work, "embedding")
    bad = ids.copy()
    bad[5, 2] = 57
    np.save(os.path.join(d, "bad.npy"), bad)
    p = run([args.tcc, "train", art, "--data", "ids=" + os.path.join(d, "bad.npy"),
             "--data", "labels=" + os.path.join(d, "y.npy"), "--steps", "4",
             "--no-shuffle", "--no-progress"], ok=False)
    want = "gather: index 57 at position [1,2] of the indices is outside [-50, 50)"
    if p.returncode == 0 or want not in p.stderr:
        sys.exit(f"bad token id: expected failure with '{want}', got "
                 f"rc={p.returncode}\n{p.stderr}")
    print("out-of-range token id: rejected")


if __name__ == "__main__":
    main()

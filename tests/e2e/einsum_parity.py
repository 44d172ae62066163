#!/usr/bin/python3
"""End to end against PyTorch: Einsum as transformers write it.

A small attention block written with torch.einsum (projections "btd,hd->bth",
scores "bqd,bkd->bqk", values "bqk,bkd->bqd", a per-head diagonal "bii->bi"
and an outer product "bi,j->bij") is exported with torch.onnx.export (opset
14), compiled by tcc and trained for a few AdamW steps by tcc (--no-shuffle)
and PyTorch. The per-step losses must agree (rtol 1e-4): this checks the
importer's lowering of Einsum to transposes, batched matmuls, masks and sums,
forward and backward.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn

BATCH, SAMPLES, STEPS, LR = 4, 16, 5, 1e-2


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p


class EinsumBlock(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.wq = nn.Parameter(torch.randn(d, d, generator=g) * 0.3)
        self.wk = nn.Parameter(torch.randn(d, d, generator=g) * 0.3)
        self.wv = nn.Parameter(torch.randn(d, d, generator=g) * 0.3)
        self.scale = nn.Parameter(torch.randn(d, generator=g))

    def forward(self, x):  # x: [b, t, d]
        q = torch.einsum("btd,hd->bth", x, self.wq)
        k = torch.einsum("btd,hd->bth", x, self.wk)
        v = torch.einsum("btd,hd->bth", x, self.wv)
        att = torch.softmax(torch.einsum("bqd,bkd->bqk", q, k) / 8 ** 0.5, dim=-1)
        y = torch.einsum("bqk,bkd->bqd", att, v)
        # A diagonal and an outer product: the two other kinds of term.
        sq = torch.einsum("bqd,bkd->bqk", y, y)
        diag = torch.einsum("bii->bi", sq)
        return y + torch.einsum("bi,j->bij", diag, self.scale)


def torch_losses(model, x, y):
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    losses = []
    per_epoch = SAMPLES // BATCH
    for step in range(STEPS):
        b = step % per_epoch
        xb = torch.from_numpy(x[b * BATCH:(b + 1) * BATCH])
        yb = torch.from_numpy(y[b * BATCH:(b + 1) * BATCH])
        opt.zero_grad()
        l = nn.functional.mse_loss(model(xb), yb)
        l.backward()
        opt.step()
        losses.append(l.item())
    return losses


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.RandomState(1)
    x = rng.randn(SAMPLES, 8, 8).astype(np.float32)
    y = rng.randn(SAMPLES, 8, 8).astype(np.float32)

    model = EinsumBlock()
    path = os.path.join(args.work, "einsum.onnx")
    torch.onnx.export(model, torch.from_numpy(x[:2]), path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
                      opset_version=14, do_constant_folding=False)
    equations = [a.s.decode() for n in onnx.load(path).graph.node
                 if n.op_type == "Einsum" for a in n.attribute]
    if len(equations) != 8:
        sys.exit(f"expected 8 Einsum nodes in the export, found {equations}")

    np.save(os.path.join(args.work, "x.npy"), x)
    np.save(os.path.join(args.work, "y.npy"), y)
    art = os.path.join(args.work, "einsum.tcc")
    run([args.tcc, "compile", path, "-o", art, "--batch", str(BATCH), "--loss", "mse",
         "--optimizer", "adamw", "--lr", str(LR)])
    metrics = os.path.join(args.work, "metrics.jsonl")
    run([args.tcc, "train", art, "--data", "x=" + os.path.join(args.work, "x.npy"),
         "--data", "labels=" + os.path.join(args.work, "y.npy"), "--steps", str(STEPS),
         "--no-shuffle", "--no-progress", "--metrics", metrics])
    got = [json.loads(l)["loss"] for l in open(metrics)]
    want = torch_losses(EinsumBlock(), x, y)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6,
                               err_msg="einsum: per-step losses differ")
    print(f"einsum ({', '.join(equations)}): {STEPS} steps match PyTorch "
          f"(final loss {got[-1]:.6f})")


if __name__ == "__main__":
    main()

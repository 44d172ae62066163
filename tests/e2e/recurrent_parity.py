#!/usr/bin/python3
"""End to end against PyTorch: recurrent layers (ONNX LSTM, GRU, RNN).

A small sequence model, a 2-layer bidirectional batch-first nn.LSTM, an
nn.GRU (exported with linear_before_reset = 1, PyTorch's formula), an
nn.RNN with ReLU and a Linear head reading both the GRU's sequence output Y
and its final state Y_h, is exported by torch.onnx.export (opset 14) and
compiled by tcc, which unrolls the recurrences at import.

1. One SGD step with lr = 1 on one batch: the loss is the forward's mse and
   each parameter's change is its gradient; both must match PyTorch
   (rtol 1e-4), for every LSTM/GRU/RNN weight and bias (the export reorders
   their gates with Slice/Concat, so tcc's gradient flows back through them
   to PyTorch's own tensors).
2. A few AdamW steps (--no-shuffle): the per-step losses must match.
"""
import argparse
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

T, FEATURES, HIDDEN, OUT = 8, 4, 16, 3
BATCH, SAMPLES, STEPS, LR = 4, 12, 4, 1e-2
RTOL, ATOL = 1e-4, 1e-6


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lstm = nn.LSTM(FEATURES, HIDDEN, num_layers=2, bidirectional=True,
                            batch_first=True)
        self.gru = nn.GRU(2 * HIDDEN, HIDDEN, batch_first=True)
        self.rnn = nn.RNN(HIDDEN, HIDDEN, nonlinearity="relu", batch_first=True)
        self.head = nn.Linear(HIDDEN, OUT)

    def forward(self, x):  # x: [N, T, FEATURES]
        y, _ = self.lstm(x)
        y, h = self.gru(y)  # h: [1, N, HIDDEN]
        y, _ = self.rnn(y + h.transpose(0, 1))
        return self.head(y)


def export(model, x, path):
    # No constant folding: PyTorch's parameters stay initializers under their
    # own names, the gate reordering is Slice/Concat on them.
    torch.onnx.export(model, torch.from_numpy(x[:2]), path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
                      opset_version=14, do_constant_folding=False)
    ops = {n.op_type for n in onnx.load(path).graph.node}
    missing = {"LSTM", "GRU", "RNN"} - ops
    if missing:
        sys.exit(f"the export has no {sorted(missing)} (ops: {sorted(ops)})")


def train(tcc, d, onnx_path, x, y, optimizer, lr, steps, batch):
    art = os.path.join(d, f"{optimizer}.tcc")
    run([tcc, "compile", onnx_path, "-o", art, "--batch", str(batch), "--loss", "mse",
         "--optimizer", optimizer, "--lr", str(lr)])
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)
    trained = os.path.join(d, f"trained_{optimizer}.onnx")
    metrics = os.path.join(d, f"metrics_{optimizer}.jsonl")
    run([tcc, "train", art, "--data", "x=" + os.path.join(d, "x.npy"),
         "--data", "labels=" + os.path.join(d, "y.npy"), "--steps", str(steps),
         "--no-shuffle", "--no-progress", "--metrics", metrics, "--export", trained])
    losses = [json.loads(l)["loss"] for l in open(metrics)]
    params = {t.name: onnx.numpy_helper.to_array(t)
              for t in onnx.load(trained).graph.initializer}
    return losses, params


def gradients(tcc, d, onnx_path, x, y):
    model = Recurrent()
    initial = {k: v.detach().clone() for k, v in model.named_parameters()}
    loss = nn.functional.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y))
    loss.backward()
    losses, params = train(tcc, d, onnx_path, x, y, "sgd", 1, 1, len(x))
    np.testing.assert_allclose(losses[0], loss.item(), rtol=RTOL, atol=ATOL,
                               err_msg="the forward (loss) differs")
    worst = 0.0
    for k, p in model.named_parameters():
        if k not in params:
            sys.exit(f"tcc's export has no parameter {k} (has {sorted(params)})")
        grad = p.grad.numpy()
        got = initial[k].numpy() - params[k]  # lr = 1
        np.testing.assert_allclose(got, grad, rtol=RTOL, atol=ATOL,
                                   err_msg=f"gradient of {k} differs")
        worst = max(worst, float(np.max(np.abs(got - grad) / (np.abs(grad) + 1e-6))))
    print(f"gradients: loss and {len(initial)} parameter gradients match PyTorch "
          f"(max rel diff {worst:.1e})")


def adamw(tcc, d, onnx_path, x, y):
    model = Recurrent()
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    want = []
    for step in range(STEPS):
        b = step % (SAMPLES // BATCH)
        xb = torch.from_numpy(x[b * BATCH:(b + 1) * BATCH])
        yb = torch.from_numpy(y[b * BATCH:(b + 1) * BATCH])
        opt.zero_grad()
        l = nn.functional.mse_loss(model(xb), yb)
        l.backward()
        opt.step()
        want.append(l.item())
    got, _ = train(tcc, d, onnx_path, x, y, "adamw", LR, STEPS, BATCH)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL,
                               err_msg="AdamW: per-step losses differ")
    print(f"adamw: {STEPS} steps match PyTorch (losses {', '.join(f'{v:.6f}' for v in got)})")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    # The exporter warns that batch-dependent initial states make a fixed
    # batch; tcc fixes the batch at compile time anyway.
    warnings.filterwarnings("ignore", category=UserWarning)
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.RandomState(1)
    x = rng.randn(SAMPLES, T, FEATURES).astype(np.float32)
    y = rng.randn(SAMPLES, T, OUT).astype(np.float32)
    onnx_path = os.path.join(args.work, "recurrent.onnx")
    export(Recurrent(), x, onnx_path)
    gradients(args.tcc, args.work, onnx_path, x[:BATCH], y[:BATCH])
    adamw(args.tcc, args.work, onnx_path, x, y)


if __name__ == "__main__":
    main()

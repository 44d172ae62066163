#!/usr/bin/python3
"""End to end against PyTorch: the same MLP, data, order and optimizer.

A torch.nn MLP is exported with torch.onnx.export, compiled by tcc, and
trained for 10 steps by both tcc (--no-shuffle, so batches come in file
order) and PyTorch. The per-step losses and the exported parameters must
agree (rtol 1e-4). Cases cover AdamW and SGD with momentum, cross-entropy
and mean squared error.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

BATCH, SAMPLES, STEPS = 8, 40, 10


def make_model(out_dim):
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 8),
                         nn.ReLU(), nn.Linear(8, out_dim))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def case(tcc, work, name, loss, optimizer, lr, momentum=0.0):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    out_dim = 4 if loss == "cross_entropy" else 3
    model = make_model(out_dim)
    onnx_path = os.path.join(d, "model.onnx")
    torch.onnx.export(model, torch.randn(2, 12), onnx_path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
                      opset_version=17)
    rng = np.random.RandomState(1)
    x = rng.randn(SAMPLES, 12).astype(np.float32)
    if loss == "cross_entropy":
        y = rng.randint(0, out_dim, size=SAMPLES).astype(np.int64)
    else:
        y = rng.randn(SAMPLES, out_dim).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)

    art = os.path.join(d, "model.tcc")
    cmd = [tcc, "compile", onnx_path, "-o", art, "--batch", str(BATCH),
           "--loss", loss, "--optimizer", optimizer, "--lr", str(lr)]
    if momentum:
        cmd += ["--momentum", str(momentum)]
    run(cmd)
    trained = os.path.join(d, "trained.onnx")
    metrics = os.path.join(d, "metrics.jsonl")
    run([tcc, "train", art, "--data", "x=" + os.path.join(d, "x.npy"),
         "--data", "labels=" + os.path.join(d, "y.npy"), "--steps", str(STEPS),
         "--no-shuffle", "--no-progress", "--metrics", metrics, "--export", trained])
    tcc_losses = [json.loads(l)["loss"] for l in open(metrics)]

    if optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    crit = nn.CrossEntropyLoss() if loss == "cross_entropy" else nn.MSELoss()
    torch_losses = []
    per_epoch = SAMPLES // BATCH
    for step in range(STEPS):
        b = step % per_epoch
        xb = torch.from_numpy(x[b * BATCH:(b + 1) * BATCH])
        yb = torch.from_numpy(y[b * BATCH:(b + 1) * BATCH])
        opt.zero_grad()
        l = crit(model(xb), yb)
        l.backward()
        opt.step()
        torch_losses.append(l.item())

    np.testing.assert_allclose(tcc_losses, torch_losses, rtol=1e-4, atol=1e-6,
                               err_msg=f"{name}: per-step losses differ")
    exported = {t.name: onnx.numpy_helper.to_array(t)
                for t in onnx.load(trained).graph.initializer}
    worst = 0.0
    for k, v in model.state_dict().items():
        ref = v.detach().numpy()
        np.testing.assert_allclose(exported[k], ref, rtol=1e-4, atol=1e-6,
                                   err_msg=f"{name}: parameter {k} differs")
        worst = max(worst, float(np.max(np.abs(exported[k] - ref) /
                                        (np.abs(ref) + 1e-6))))
    print(f"{name}: {STEPS} steps match PyTorch (final loss {tcc_losses[-1]:.6f}, "
          f"max rel param diff {worst:.2e})")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    case(args.tcc, args.work, "adamw_ce", "cross_entropy", "adamw", 1e-2)
    case(args.tcc, args.work, "sgd_momentum_ce", "cross_entropy", "sgd", 0.05, 0.9)
    case(args.tcc, args.work, "adamw_mse", "mse", "adamw", 1e-2)
    case(args.tcc, args.work, "sgd_mse", "mse", "sgd", 0.05)


if __name__ == "__main__":
    main()

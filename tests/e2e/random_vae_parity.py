#!/usr/bin/python3
"""End to end: a tiny VAE whose reparameterization draws randn_like.

torch 1.13 exports `mu + exp(0.5 logvar) * randn_like(mu)` as
RandomNormalLike, which tcc imports as tcc.random: values from its
counter-based generator keyed by (seed, rng.step, element index). The
test recomputes tcc's draws here from the documented formula (SplitMix64,
Box-Muller on the two 32-bit halves; the seed is the FNV-1a hash of the
node's output name) and checks, against PyTorch with that noise fixed, the
loss (MSE + KL) and every parameter's gradient of one SGD step (lr = 1,
rtol 1e-4), then that the second step draws new noise (step 1's values),
compiled plainly and with the whole forward recomputed in the backward (a
1-byte --memory-budget: the recomputed tcc.random draws the same noise).
Finally tcc trains it for 50 Adam steps and the loss must fall.
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

RTOL, ATOL = 1e-4, 1e-6
M64 = (1 << 64) - 1


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def fnv1a(s):
    h = 0xCBF29CE484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001B3) & M64
    return h


def tcc_normal(seed, step, shape, rank=0):
    """tcc.random normal(0, 1): runtime/cpu/KernelsMath.cpp run_random."""
    n = int(np.prod(shape))
    key = mix64((seed & M64) ^ mix64(step))
    out = np.empty(n, np.float32)
    for i in range(n):
        bits = mix64((key + (rank * n + i + 1) * 0x9E3779B97F4A7C15) & M64)
        u1 = ((bits >> 32) + 1) * 2.0 ** -32
        u2 = (bits & 0xFFFFFFFF) * 2.0 ** -32
        out[i] = np.sqrt(-2.0 * np.log(u1)) * np.cos(2 * np.pi * u2)
    return out.reshape(shape)


def check_two_steps(tcc, art, xp, metrics, trained, initial, grads, ref_losses,
                    plan):
    """One SGD step's gradients (lr = 1: p0 - p1) and two steps' losses."""
    run([tcc, "train", art, "--data", "x=" + xp, "--steps", "1", "--no-shuffle",
         "--no-progress", "--metrics", metrics, "--export", trained])
    exported = {i.name: onnx.numpy_helper.to_array(i)
                for i in onnx.load(trained).graph.initializer}
    for k, g in grads.items():
        np.testing.assert_allclose(initial[k].numpy() - exported[k], g.numpy(),
                                   rtol=RTOL, atol=ATOL,
                                   err_msg=f"{plan}: gradient of {k} differs")
    run([tcc, "train", art, "--data", "x=" + xp, "--steps", "2", "--no-shuffle",
         "--no-progress", "--metrics", metrics])
    losses = [json.loads(l)["loss"] for l in open(metrics)]
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL,
                               err_msg="the losses of two steps differ (the noise "
                               "of step 0 or 1 is not tcc.random's)")
    print(f"vae ({plan}): loss {losses[0]:.6f}, {losses[1]:.6f} and gradients match PyTorch "
          "with tcc's noise")


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(8, 6)
        self.mu = nn.Linear(6, 3)
        self.lv = nn.Linear(6, 3)
        self.dec = nn.Linear(3, 8)
        self.eps = None  # fixed noise for the reference; else randn_like

    def forward(self, x):
        h = torch.tanh(self.enc(x))
        mu, lv = self.mu(h), self.lv(h)
        eps = torch.randn_like(mu) if self.eps is None else self.eps
        r = self.dec(mu + torch.exp(0.5 * lv) * eps)
        kl = -0.5 * torch.mean(1 + lv - mu ** 2 - lv.exp())
        return ((r - x) ** 2).mean() + kl


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    d = args.work
    os.makedirs(d, exist_ok=True)
    x = np.random.RandomState(5).randn(16, 8).astype(np.float32)
    model = VAE()
    path = os.path.join(d, "vae.onnx")
    torch.onnx.export(model, (torch.from_numpy(x),), path, input_names=["x"],
                      output_names=["loss"], opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    nodes = [n for n in onnx.load(path).graph.node if n.op_type == "RandomNormalLike"]
    if len(nodes) != 1:
        sys.exit("the export has no RandomNormalLike")
    seed = fnv1a(nodes[0].output[0])  # no seed attribute: the output's name

    # PyTorch with tcc's noise of steps 0 and 1: two SGD steps, lr = 1.
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    initial = {k: v.detach().clone() for k, v in model.named_parameters()}
    ref_losses, grads = [], {}
    for step in range(2):
        model.eps = torch.from_numpy(tcc_normal(seed, step, (16, 3)))
        opt.zero_grad()
        loss = model(torch.from_numpy(x))
        loss.backward()
        if step == 0:
            grads = {k: p.grad.detach().clone() for k, p in model.named_parameters()}
        ref_losses.append(loss.item())
        opt.step()

    xp = os.path.join(d, "x.npy")
    np.save(xp, x)
    metrics = os.path.join(d, "metrics.jsonl")
    trained = os.path.join(d, "trained.onnx")
    # Also with the whole forward recomputed in the backward (a 1-byte
    # budget): the recomputed tcc.random must draw the same noise.
    for plan, extra in (("plain", []), ("remat", ["--memory-budget", "1",
                                                   "--recompute", "all"])):
        art = os.path.join(d, f"vae_{plan}.tcc")
        run([args.tcc, "compile", path, "-o", art, "--loss", "output:loss",
             "--optimizer", "sgd", "--lr", "1"] + extra)
        check_two_steps(args.tcc, art, xp, metrics, trained, initial, grads,
                        ref_losses, plan)

    # Training: 50 Adam steps on the batch, the loss must fall.
    art = os.path.join(d, "vae_adam.tcc")
    run([args.tcc, "compile", path, "-o", art, "--loss", "output:loss",
         "--optimizer", "adamw", "--lr", "0.02"])
    run([args.tcc, "train", art, "--data", "x=" + xp, "--steps", "50", "--no-shuffle",
         "--no-progress", "--metrics", metrics])
    losses = [json.loads(l)["loss"] for l in open(metrics)]
    first, last = np.mean(losses[:5]), np.mean(losses[-5:])
    if not (len(losses) == 50 and last < 0.8 * first):
        sys.exit(f"vae: the loss did not fall over 50 steps: {first:.4f} -> {last:.4f}")
    print(f"vae: 50 AdamW steps, loss {first:.4f} -> {last:.4f} (means of 5)")


if __name__ == "__main__":
    main()

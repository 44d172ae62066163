#!/usr/bin/python3
"""The optimizers of `tcc compile` against PyTorch, 30 steps each.

One torch.nn MLP is exported with torch.onnx.export and compiled with each
optimizer configuration; tcc trains it (--no-shuffle: batches in file
order) and PyTorch trains the same module on the same batches. The
per-step losses and the exported parameters must agree. References:
torch.optim.Adam (L2 weight decay), torch.optim.AdamW with other betas and
eps, torch.optim.SGD(nesterov=True), parameter groups (--no-decay: `1d`
and globs, against torch param groups with weight_decay 0), Lion, whose
update (Chen et al. 2023; torch has none) is written out below, and
Adafactor, re-implemented below from torch.optim.Adafactor (PyTorch 2.5+;
Debian's torch 1.13 lacks it) as its documentation and
_single_tensor_adafactor state the algorithm.
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

BATCH, SAMPLES, STEPS = 8, 40, 30


def make_model():
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 8),
                         nn.ReLU(), nn.Linear(8, 4))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n"
                 f"{p.stdout}\n{p.stderr}")
    return p.stdout


class Lion:
    """Lion as lion-pytorch writes it, in the order of tcc's kernel."""

    def __init__(self, groups, lr, betas, weight_decay):
        self.groups = [dict(g) for g in groups]
        for g in self.groups:
            g.setdefault("weight_decay", weight_decay)
        self.lr, self.betas = lr, betas
        self.state = {}

    def zero_grad(self):
        for g in self.groups:
            for p in g["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self):
        b1, b2 = self.betas
        for g in self.groups:
            for p in g["params"]:
                m = self.state.setdefault(p, torch.zeros_like(p))
                c = m * b1 + p.grad * (1 - b1)
                p.mul_(1 - self.lr * g["weight_decay"])
                p.add_(torch.sign(c), alpha=-self.lr)
                m.mul_(b2).add_(p.grad, alpha=1 - b2)


class Adafactor:
    """torch.optim.Adafactor's single-tensor step (PyTorch 2.5), written
    with torch 1.13's ops in its order: lr 1e-2, beta2_decay -0.8, eps
    (None: the dtype's eps, 1e-3), d 1, decoupled weight decay."""

    def __init__(self, groups, lr, weight_decay, beta2_decay=-0.8,
                 eps=(None, 1e-3), d=1.0):
        self.groups = [dict(g) for g in groups]
        for g in self.groups:
            g.setdefault("weight_decay", weight_decay)
        self.lr, self.beta2_decay, self.eps, self.d = lr, beta2_decay, eps, d
        self.state = {}

    def zero_grad(self):
        for g in self.groups:
            for p in g["params"]:
                p.grad = None

    @torch.no_grad()
    def step(self):
        lr, d = self.lr, self.d
        for group in self.groups:
            wd = group["weight_decay"]
            for p in group["params"]:
                grad = p.grad
                st = self.state.get(p)
                if st is None:
                    st = {"step": 0.0}
                    if grad.dim() > 1:
                        row = list(grad.shape)
                        row[-1] = 1
                        col = list(grad.shape)
                        col[-2] = 1
                        st["row_var"] = grad.new_zeros(row)
                        st["col_var"] = grad.new_zeros(col)
                    else:
                        st["variance"] = torch.zeros_like(grad)
                    self.state[p] = st
                eps1 = self.eps[0] or torch.finfo(p.dtype).eps
                eps2 = self.eps[1]
                st["step"] += 1
                t = st["step"]
                one_minus_beta2_t = t ** self.beta2_decay
                rho_t = min(lr, 1 / (t ** 0.5))
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
                if wd != 0:
                    p.mul_(1 - lr * wd)
                if grad.dim() > 1:
                    row_var, col_var = st["row_var"], st["col_var"]
                    row_mean = torch.linalg.vector_norm(
                        grad, dim=-1, keepdim=True).square_().div_(grad.size(-1))
                    row_var.lerp_(row_mean, one_minus_beta2_t)
                    col_mean = torch.linalg.vector_norm(
                        grad, dim=-2, keepdim=True).square_().div_(grad.size(-2))
                    col_var.lerp_(col_mean, one_minus_beta2_t)
                    var_estimate = row_var @ col_var
                    var_estimate.div_(
                        row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
                else:
                    st["variance"].lerp_(grad * grad, one_minus_beta2_t)
                    var_estimate = st["variance"].clone()
                update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
                update.mul_(grad)
                denom = max(1.0, update.norm(2).item() /
                            ((update.numel() ** 0.5) * d))
                p.add_(update, alpha=-alpha / denom)


def torch_optimizer(model, name, lr, wd, betas, eps, momentum, nesterov,
                    no_decay):
    """The reference, with tcc's parameter groups: the names no_decay
    selects get weight decay 0."""
    named = list(model.named_parameters())
    if no_decay:
        groups = [{"params": [p for n, p in named if not no_decay(n, p)]},
                  {"params": [p for n, p in named if no_decay(n, p)],
                   "weight_decay": 0.0}]
    else:
        groups = [{"params": [p for _, p in named]}]
    if name == "adam":
        return torch.optim.Adam(groups, lr=lr, betas=betas, eps=eps,
                                weight_decay=wd)
    if name == "adamw":
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps,
                                 weight_decay=wd)
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=momentum,
                               nesterov=nesterov, weight_decay=wd)
    if name == "adafactor":
        return Adafactor(groups, lr=lr, weight_decay=wd)
    return Lion(groups, lr=lr, betas=betas, weight_decay=wd)


def case(tcc, work, x, y, name, optimizer, lr, wd, flags, betas=(0.9, 0.999),
         eps=1e-8, momentum=0.0, nesterov=False, no_decay=None, rtol=1e-4,
         atol=1e-6):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    model = make_model()
    onnx_path = os.path.join(d, "model.onnx")
    torch.onnx.export(model, torch.randn(2, 12), onnx_path, input_names=["x"],
                      output_names=["y"],
                      dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
                      opset_version=17)
    art = os.path.join(d, "model.tcc")
    run([tcc, "compile", onnx_path, "-o", art, "--batch", str(BATCH),
         "--optimizer", optimizer, "--lr", str(lr), "--weight-decay", str(wd)]
        + flags)
    trained = os.path.join(d, "trained.onnx")
    metrics = os.path.join(d, "metrics.jsonl")
    run([tcc, "train", art, "--data", "x=" + os.path.join(work, "x.npy"),
         "--data", "labels=" + os.path.join(work, "y.npy"), "--steps",
         str(STEPS), "--no-shuffle", "--no-progress", "--metrics", metrics,
         "--export", trained])
    tcc_losses = [json.loads(l)["loss"] for l in open(metrics)]

    opt = torch_optimizer(model, optimizer, lr, wd, betas, eps, momentum,
                          nesterov, no_decay)
    crit = nn.CrossEntropyLoss()
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

    np.testing.assert_allclose(tcc_losses, torch_losses, rtol=rtol, atol=atol,
                               err_msg=f"{name}: per-step losses differ")
    exported = {t.name: onnx.numpy_helper.to_array(t)
                for t in onnx.load(trained).graph.initializer}
    worst = 0.0
    for k, v in model.state_dict().items():
        ref = v.detach().numpy()
        np.testing.assert_allclose(exported[k], ref, rtol=rtol, atol=atol,
                                   err_msg=f"{name}: parameter {k} differs")
        worst = max(worst, float(np.max(np.abs(exported[k] - ref) /
                                        (np.abs(ref) + 1e-6))))
    print(f"{name}: {STEPS} steps match PyTorch (loss {tcc_losses[0]:.4f} -> "
          f"{tcc_losses[-1]:.4f}, max rel param diff {worst:.2e})")
    return exported


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.RandomState(1)
    x = rng.randn(SAMPLES, 12).astype(np.float32)
    y = rng.randint(0, 4, size=SAMPLES).astype(np.int64)
    np.save(os.path.join(args.work, "x.npy"), x)
    np.save(os.path.join(args.work, "y.npy"), y)
    t, w = args.tcc, args.work

    case(t, w, x, y, "adam_l2", "adam", 1e-2, 0.1,
         ["--betas", "0.8,0.99", "--eps", "1e-6"], betas=(0.8, 0.99), eps=1e-6)
    case(t, w, x, y, "adamw_betas_eps", "adamw", 1e-2, 0.05,
         ["--betas", "0.85,0.995", "--eps", "1e-7"], betas=(0.85, 0.995),
         eps=1e-7)
    case(t, w, x, y, "sgd_nesterov", "sgd", 0.05, 0.01,
         ["--momentum", "0.9", "--nesterov"], momentum=0.9, nesterov=True)
    case(t, w, x, y, "lion", "lion", 1e-3, 0.5, ["--betas", "0.9,0.99"],
         betas=(0.9, 0.99))
    case(t, w, x, y, "adafactor", "adafactor", 1e-2, 0.1, [])
    # Parameter groups: `1d` (the biases), then globs (the first layer and
    # the last bias); a large decay so that forgetting a group shows.
    one_d = case(t, w, x, y, "adamw_no_decay_1d", "adamw", 1e-2, 0.5,
                 ["--no-decay", "1d"], no_decay=lambda n, p: p.dim() < 2)
    decayed = case(t, w, x, y, "adamw_decay_all", "adamw", 1e-2, 0.5, [])
    assert not np.allclose(one_d["0.bias"], decayed["0.bias"]), \
        "--no-decay 1d changed nothing"
    case(t, w, x, y, "lion_no_decay_glob", "lion", 1e-3, 0.5,
         ["--no-decay", "0.*,4.bias"], betas=(0.9, 0.99),
         no_decay=lambda n, p: n.startswith("0.") or n == "4.bias")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""End to end against PyTorch: models that compute their own loss.

Each case exports a tiny torch module whose forward returns a scalar loss,
F.cross_entropy (SoftmaxCrossEntropyLoss) or F.nll_loss (NegativeLogLikelihoodLoss; torch
fuses nll_loss of log_softmax into SoftmaxCrossEntropyLoss, so these take
log(softmax) or raw scores), with class weights, an ignore_index that some
targets hit, sum or mean reduction, and [N, C] or [N, C, d] scores. tcc
compiles it with --loss output:loss (SGD, lr = 1) and trains one step on one
batch: the step's loss must equal the forward's, and each parameter's change
p0 - p1 its gradient, both as PyTorch computes them (rtol 1e-4). A second
step checks that training goes on from the updated weights. For the first
case, --eval-every evaluates the graph's loss output after step 1: step 2's
loss.
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
import torch.nn.functional as F

RTOL, ATOL = 1e-4, 1e-6


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


class Classifier(nn.Module):
    """Linear -> tanh -> Linear scores on the last axis, moved to axis 1 for
    [N, L, 6] inputs; the loss is `loss(scores, target)`."""

    def __init__(self, classes, loss):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, classes)
        self.loss = loss
        # A buffer, not a parameter: exported as an initializer that only
        # reaches the loss's weight input, so tcc keeps it constant.
        self.register_buffer("w", torch.linspace(0.5, 2.0, classes))

    def forward(self, x, t):
        s = self.fc2(torch.tanh(self.fc1(x)))
        if s.dim() == 3:
            s = s.permute(0, 2, 1)  # [N, C, L]
        return self.loss(self, s, t)


def case(tcc, work, name, loss, x_shape, classes, expect_op, ignore=None,
         evaluate=False):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    rng = np.random.RandomState(3)
    x = rng.randn(*x_shape).astype(np.float32)
    t = rng.randint(0, classes, x_shape[:-1]).astype(np.int64)
    if ignore is not None:
        t.flat[::3] = ignore  # every third target is ignored
    model = Classifier(classes, loss)
    path = os.path.join(d, "model.onnx")
    torch.onnx.export(model, (torch.from_numpy(x), torch.from_numpy(t)), path,
                      input_names=["x", "t"], output_names=["loss"], opset_version=13,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    if expect_op not in ops:
        sys.exit(f"{name}: the export has no {expect_op} (ops: {ops})")

    # PyTorch: two SGD steps with lr = 1.
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    initial = {k: v.detach().clone() for k, v in model.named_parameters()}
    ref_losses, grads = [], {}
    for step in range(2):
        opt.zero_grad()
        out = model(torch.from_numpy(x), torch.from_numpy(t))
        out.backward()
        if step == 0:
            grads = {k: p.grad.detach().clone() for k, p in model.named_parameters()}
        ref_losses.append(out.item())
        opt.step()

    art = os.path.join(d, "model.tcc")
    run([tcc, "compile", path, "-o", art, "--loss", "output:loss", "--optimizer", "sgd",
         "--lr", "1"])
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "t.npy"), t)
    metrics = os.path.join(d, "metrics.jsonl")
    trained = os.path.join(d, "trained.onnx")
    exported = {}
    for steps in (1, 2):
        run([tcc, "train", art, "--data", "x=" + os.path.join(d, "x.npy"),
             "--data", "t=" + os.path.join(d, "t.npy"), "--steps", str(steps),
             "--no-shuffle", "--no-progress", "--metrics", metrics, "--export", trained])
        if steps == 1:
            exported = {i.name: onnx.numpy_helper.to_array(i)
                        for i in onnx.load(trained).graph.initializer}
    losses = [json.loads(l)["loss"] for l in open(metrics)]
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL,
                               err_msg=f"{name}: the losses of two steps differ")
    if evaluate:
        # --eval-every evaluates the graph's own loss output: after step 1,
        # on the same batch, it is step 2's loss.
        run([tcc, "train", art, "--data", "x=" + os.path.join(d, "x.npy"),
             "--data", "t=" + os.path.join(d, "t.npy"), "--steps", "1",
             "--no-shuffle", "--no-progress", "--metrics", metrics,
             "--eval-every", "1", "--eval-data", "x=" + os.path.join(d, "x.npy"),
             "--eval-data", "t=" + os.path.join(d, "t.npy")])
        line = json.loads(open(metrics).read().splitlines()[-1])
        np.testing.assert_allclose(line["eval_loss"], ref_losses[1], rtol=RTOL,
                                   atol=ATOL, err_msg=f"{name}: eval_loss")
    # Unused buffers are not exported; a used one must not have trained.
    weighted = any(i.name == "w" for i in onnx.load(path).graph.initializer)
    if weighted:
        np.testing.assert_array_equal(exported["w"], model.w.numpy(),
                                      err_msg=f"{name}: the class weights changed")
    worst = 0.0
    for k, g in grads.items():
        tcc_grad = initial[k].numpy() - exported[k]  # lr = 1
        np.testing.assert_allclose(tcc_grad, g.numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=f"{name}: gradient of {k} differs")
        worst = max(worst, float(np.max(np.abs(tcc_grad - g.numpy()) /
                                        (np.abs(g.numpy()) + 1e-6))))
    print(f"{name}: loss {losses[0]:.6f} and gradients match PyTorch over two steps "
          f"({expect_op}; max rel grad diff {worst:.1e})")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    t, w = args.tcc, args.work
    sce, nll = "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"
    case(t, w, "cross_entropy", lambda m, s, y: F.cross_entropy(s, y), (8, 6), 5, sce,
         evaluate=True)
    case(t, w, "cross_entropy_weight_ignore_nd",
         lambda m, s, y: F.cross_entropy(s, y, weight=m.w, ignore_index=2),
         (4, 3, 6), 5, sce, ignore=2)
    case(t, w, "cross_entropy_sum_ignore_outside",
         lambda m, s, y: F.cross_entropy(s, y, ignore_index=-1, reduction="sum"),
         (8, 6), 4, sce, ignore=-1)
    case(t, w, "nll_loss_weight",
         lambda m, s, y: F.nll_loss(torch.log(torch.softmax(s, 1)), y, weight=m.w),
         (8, 6), 5, nll)
    case(t, w, "nll_loss_sum_weight_ignore_nd",
         lambda m, s, y: F.nll_loss(torch.log(torch.softmax(s, 1)), y, weight=m.w,
                                    ignore_index=1, reduction="sum"),
         (4, 3, 6), 4, nll, ignore=1)
    case(t, w, "nll_loss_mean_ignore",
         lambda m, s, y: F.nll_loss(s, y, ignore_index=0),
         (4, 3, 6), 3, nll, ignore=0)


if __name__ == "__main__":
    main()

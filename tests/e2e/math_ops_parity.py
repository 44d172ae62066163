#!/usr/bin/python3
"""End to end against PyTorch: the math family (GELU, LayerNorm, element-wise
functions and the unary family of tcc.unary_fn, Pow, Mod, Dropout, the norms,
log-sum-exp, product and cumsum reductions) exported by torch.onnx.export at
opset 17. Ops torch 1.13 cannot export (Sinh, Shrink, ReduceSumSquare, ...)
are exported as stand-in ops renamed in the file, PyTorch computing the real
function for the reference.

Each deterministic case compiles a small torch module with tcc (mse loss, SGD
with lr = 1) and trains one step on one batch: the step's loss is the forward
output's mse, and each parameter's change p0 - p1 is its gradient. Both must
match PyTorch (rtol 1e-4). Dropout with p > 0 cannot match PyTorch's random
stream; its case recovers the masks tcc drew from the parameter updates and
checks the fraction dropped, the 1/(1-p) scaling, that runs repeat exactly
(also when resumed from a checkpoint), that each step draws a new mask, and
that evaluation does not drop.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

RTOL, ATOL = 1e-4, 1e-6


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def export(model, example, path, training=False):
    # No constant folding: it would replace a Linear's weight on 3-D inputs
    # by a transposed copy under another name.
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, example, path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, opset_version=17,
                      training=mode, do_constant_folding=False)


def ops_in(path):
    return sorted({n.op_type for n in onnx.load(path).graph.node})


def tcc_train(tcc, d, onnx_path, x, y, steps=1, tag="", extra=(), loss="mse",
              compile_extra=()):
    """Compiles with SGD lr=1 and trains `steps` steps; returns (losses,
    exported initializers, stdout)."""
    art = os.path.join(d, "model.tcc")
    run([tcc, "compile", onnx_path, "-o", art, "--batch", str(len(x)),
         "--loss", loss, "--optimizer", "sgd", "--lr", "1", *compile_extra])
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)
    trained = os.path.join(d, f"trained{tag}.onnx")
    metrics = os.path.join(d, f"metrics{tag}.jsonl")
    out = run([tcc, "train", art, "--data", "x=" + os.path.join(d, "x.npy"),
               "--data", "labels=" + os.path.join(d, "y.npy"), "--steps", str(steps),
               "--no-shuffle", "--no-progress", "--metrics", metrics, "--export", trained,
               *extra])
    losses = [json.loads(l)["loss"] for l in open(metrics)]
    params = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(trained).graph.initializer}
    return losses, params, out


def parity_case(tcc, work, name, model, x_shape, expect_ops, training=False,
                compile_extra=(), rewrite=None):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    onnx_path = os.path.join(d, "model.onnx")
    rng = np.random.RandomState(1)
    x = rng.randn(*x_shape).astype(np.float32)
    if rewrite:
        model.exporting = True
    export(model, torch.from_numpy(x[:2]), onnx_path, training)
    if rewrite:
        model.exporting = False
        m = onnx.load(onnx_path)
        rewrite(m)
        onnx.save(m, onnx_path)
    found = ops_in(onnx_path)
    missing = [op for op in expect_ops if op not in found]
    if missing:
        sys.exit(f"{name}: the export has no {missing} (ops: {found})")

    model.train(training)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    out = model(torch.from_numpy(x))
    y = rng.randn(*out.shape).astype(np.float32)
    loss = nn.functional.mse_loss(out, torch.from_numpy(y))
    model.zero_grad()
    loss.backward()

    losses, params, _ = tcc_train(tcc, d, onnx_path, x, y,
                                  compile_extra=compile_extra)
    np.testing.assert_allclose(losses[0], loss.item(), rtol=RTOL, atol=ATOL,
                               err_msg=f"{name}: the forward (loss) differs")
    worst = 0.0
    for k, p in model.named_parameters():
        grad = p.grad.numpy()
        tcc_grad = initial[k].numpy() - params[k]  # lr = 1
        np.testing.assert_allclose(tcc_grad, grad, rtol=RTOL, atol=ATOL,
                                   err_msg=f"{name}: gradient of {k} differs")
        worst = max(worst, float(np.max(np.abs(tcc_grad - grad) / (np.abs(grad) + 1e-6))))
    print(f"{name}: loss and gradients match PyTorch ({', '.join(found)}; "
          f"max rel grad diff {worst:.1e})")


class Elementwise(nn.Module):
    """sigmoid, tanh, exp, log, sqrt, neg, pow by constants and by a trained
    exponent."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.e = nn.Parameter(torch.linspace(0.5, 2.0, 8))

    def forward(self, x):
        h = self.fc(x)
        s = torch.sigmoid(h)
        a = torch.tanh(h) + torch.exp(0.5 * h) + torch.log(s * 2 + 0.1)
        b = torch.sqrt(h * h + 1) - h.pow(2) * 0.1 + h.pow(3) * 0.05
        c = (s + 0.5).pow(0.5) + (s + 0.5) ** 2.5 + torch.pow(s + 0.5, self.e)
        return -a + b * c


class UnaryFamily(nn.Module):
    """The functions of tcc.unary_fn as torch spells them: abs, sign, floor,
    ceil, round, sin, cos, hardswish, hardsigmoid, leaky_relu, elu, selu,
    softplus, mish (Softplus, Tanh, Mul at opset 17), clamp and relu6 (Clip
    with constant bounds). sign..round have zero gradients, so their terms
    ride on ones that have some."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 8)

    def forward(self, x):
        F = nn.functional
        h = self.fc(x) * 3
        a = torch.abs(h) + torch.sign(h) + torch.floor(h) + torch.ceil(h) + torch.round(h)
        b = torch.sin(h) + torch.cos(h) + F.hardswish(h) + F.hardsigmoid(h)
        c = F.leaky_relu(h, 0.1) + F.elu(h, 0.5) + F.selu(h) + F.softplus(h) + F.mish(h)
        d = torch.clamp(h, -1.0, 1.5) + F.relu6(h) + torch.clamp(h, min=0.25)
        return self.fc2(a + b + c + d)


class MoreUnary(nn.Module):
    """tan, asin, acos, atan and celu (asin and acos of 0.9 tanh(h), inside
    their domain)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        u = torch.tanh(h) * 0.9
        a = torch.tan(h * 0.5) + torch.asin(u) + torch.acos(u) + torch.atan(h)
        return self.fc2(a + nn.functional.celu(h, 0.5))


# Functions torch 1.13 does not export as their ONNX op (sinh... it refuses,
# softsign, hardshrink and softshrink it decomposes, threshold it refuses):
# the export uses a stand-in op for each, renamed in the file (and given
# the op's attributes), while PyTorch's reference computes the real one.
STAND_INS = {  # stand-in -> (op, attributes)
    "Sin": ("Sinh", {}), "Cos": ("Cosh", {}), "Atan": ("Asinh", {}),
    "Tan": ("Acosh", {}), "Asin": ("Atanh", {}), "Acos": ("Softsign", {}),
    "Elu": ("ThresholdedRelu", {"alpha": 0.75}),
    "LeakyRelu": ("Shrink", {"lambd": 0.5, "bias": 0.5}),
    "Selu": ("Shrink", {"lambd": 0.25}),
}


def rename_stand_ins(model):
    for n in model.graph.node:
        if n.op_type in STAND_INS:
            op, attrs = STAND_INS[n.op_type]
            n.op_type = op
            del n.attribute[:]
            n.attribute.extend(onnx.helper.make_attribute(k, v) for k, v in attrs.items())


class Renamed(nn.Module):
    """sinh, cosh, asinh, acosh (of 1.5 + h^2), atanh (of 0.9 tanh(h)),
    softsign, thresholded relu and shrink (soft and hard), through
    STAND_INS."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 8)
        self.exporting = False

    def forward(self, x):
        F = nn.functional
        h = self.fc(x)
        u = torch.tanh(h) * 0.9
        v = 1.5 + h * h
        if self.exporting:
            a = torch.sin(h) + torch.cos(h) + torch.atan(h) + torch.tan(v)
            b = torch.asin(u) + torch.acos(h) + F.elu(h) + F.leaky_relu(h) + F.selu(h)
        else:
            a = torch.sinh(h) + torch.cosh(h) + torch.asinh(h) + torch.acosh(v)
            b = (torch.atanh(u) + F.softsign(h) + torch.where(h > 0.75, h, torch.zeros_like(h))
                 + F.softshrink(h, 0.5) + F.hardshrink(h, 0.25))
        return self.fc2(a + b)


class Remainder(nn.Module):
    """torch.fmod (ONNX Mod with fmod = 1) by a trained divisor and by a
    constant: the dividend's gradient passes through, the divisor's is
    -trunc(a / b). (torch.remainder exports as Div, Floor, Mul, Sub.)"""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.d = nn.Parameter(torch.linspace(0.7, 1.6, 8))

    def forward(self, x):
        h = self.fc(x) * 3
        return torch.fmod(h, self.d) + torch.fmod(h * h, 1.25) * 0.5


class Reductions(nn.Module):
    """torch.norm (p 1 and 2), logsumexp, prod and cumsum over a trained
    layer's output, and prod of a parameter with zeros: one in row 0 (its
    gradient is the product of the others), two in row 1 (all zero), where
    prod / x would be NaN."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.w = nn.Parameter(torch.tensor([[1.5, 0.0, -2.0, 0.5],
                                            [0.0, 3.0, 0.0, 2.0],
                                            [0.5, -1.0, 2.0, 1.5]]))

    def forward(self, x):
        h = self.fc(x).reshape(-1, 2, 4)
        a = torch.norm(h, p=1, dim=2) + torch.norm(h, p=2, dim=2)
        b = torch.logsumexp(h, dim=2) + torch.prod(h, dim=2)
        c = torch.cumsum(h, dim=2).reshape(-1, 8)
        p = torch.prod(self.w, dim=1).sum()
        return torch.cat([a, b, c], 1) * p


class NormAtZero(nn.Module):
    """ReduceL2 over a group that is all zeros: PyTorch's norm backward is 0
    there (sqrt's own would be Inf, and the chain rule's NaN)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.register_buffer("mask", torch.tensor([1., 1., 1., 1., 0., 0., 0., 0.]))

    def forward(self, x):
        h = (self.fc(x) * self.mask).reshape(-1, 2, 4)
        return torch.norm(h, p=2, dim=2)


def rename_reductions(model):
    for n in model.graph.node:
        n.op_type = {"ReduceL1": "ReduceSumSquare", "ReduceL2": "ReduceLogSum"}.get(
            n.op_type, n.op_type)


class RenamedReductions(nn.Module):
    """ReduceSumSquare and ReduceLogSum (of exp(h), positive), which torch
    does not export: ReduceL1 and ReduceL2 stand in (same axes and keepdims)
    and are renamed, while PyTorch computes sum(h^2) and log(sum(exp(h)))."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.exporting = False

    def forward(self, x):
        h = self.fc(x).reshape(-1, 2, 4)
        e = torch.exp(h)
        if self.exporting:
            return torch.norm(h, p=1, dim=2) + torch.norm(e, p=2, dim=2)
        return (h * h).sum(2) + torch.log(e.sum(2))


class FeedForward(nn.Module):
    """A transformer feed-forward block: LayerNorm(x + W2 dropout(GELU(W1 x)))."""

    def __init__(self, approximate="none", p=0.0):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.GELU(approximate=approximate)
        self.drop = nn.Dropout(p)
        self.fc2 = nn.Linear(16, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(x + self.fc2(self.drop(self.act(self.fc1(x)))))


class EncoderLayer(nn.Module):
    """nn.TransformerEncoderLayer (GELU) and a head: attention, GELU,
    LayerNorm and Dropout as a real model exports them."""

    def __init__(self, p):
        super().__init__()
        self.enc = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                              dropout=p, activation="gelu",
                                              batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.enc(x))


def seq(*mods):
    return nn.Sequential(*mods)


def dropout_case(tcc, work, p=0.25, dim=20000):
    """y = dropout(x * w), w = 0, x = 1, target 1, batch 1: after one SGD step
    with lr 1, w_j = 2 m_j / dim, where m_j is the mask (0 or 1/(1-p))."""
    name = "dropout_statistics"
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.zeros(dim))
            self.drop = nn.Dropout(p)

        def forward(self, x):
            return self.drop(x * self.w)

    onnx_path = os.path.join(d, "model.onnx")
    export(Scaled(), torch.ones(1, dim), onnx_path, training=True)
    if "Dropout" not in ops_in(onnx_path):
        sys.exit(f"{name}: the export has no Dropout")
    x = np.ones((1, dim), np.float32)
    t = np.ones((1, dim), np.float32)
    _, p1, _ = tcc_train(tcc, d, onnx_path, x, t, steps=1, tag="1")
    _, again, _ = tcc_train(tcc, d, onnx_path, x, t, steps=1, tag="1b")
    ck = os.path.join(d, "ckpt")
    shutil.rmtree(ck, ignore_errors=True)  # left by an earlier run
    _, p2, _ = tcc_train(tcc, d, onnx_path, x, t, steps=2, tag="2",
                         extra=["--checkpoint-dir", ck, "--checkpoint-every", "1"])
    # rng.step is state, so it is checkpointed: resuming after step 1 draws
    # step 2's mask again, not step 1's.
    first = os.path.join(ck, sorted(os.listdir(ck))[0])
    _, resumed, _ = tcc_train(tcc, d, onnx_path, x, t, steps=2, tag="r",
                              extra=["--resume", first])
    w1, w2 = p1["w"], p2["w"]
    if not np.array_equal(w1, again["w"]):
        sys.exit(f"{name}: two runs of the same artifact drew different masks")
    if not np.array_equal(w2, resumed["w"]):
        sys.exit(f"{name}: a run resumed after step 1 differs from an uninterrupted one")

    keep = np.float32(1) / (np.float32(1) - np.float32(p))
    m1 = w1 * dim / 2
    dropped1 = m1 == 0
    np.testing.assert_allclose(m1[~dropped1], keep, rtol=1e-5,
                               err_msg=f"{name}: kept elements are not scaled by 1/(1-p)")
    sd = np.sqrt(dim * p * (1 - p))
    if abs(dropped1.sum() - dim * p) > 5 * sd:
        sys.exit(f"{name}: {dropped1.sum()} of {dim} dropped, expected {dim * p:.0f} +- {5 * sd:.0f}")
    # Step 2's gradient is exactly zero where step 2 dropped.
    dropped2 = w2 == w1
    if abs(dropped2.sum() - dim * p) > 5 * sd:
        sys.exit(f"{name}: step 2 dropped {dropped2.sum()} of {dim}")
    both = np.sum(dropped1 & dropped2)
    # Independent masks share about p^2 of the drops; the same mask all p.
    if abs(both - dim * p * p) > 5 * np.sqrt(dim * p * p):
        sys.exit(f"{name}: steps 1 and 2 share {both} drops, expected about {dim * p * p:.0f} "
                 "(a new mask each step)")
    # Evaluation runs @forward, where dropout is the identity. A step with a
    # cross-entropy loss over the dim outputs (x = sqrt(dim), label 0) leaves
    # logits x * w of -m_j (j > 0) and dim * m_0 (1 - 1/dim): evaluated
    # against label 1 they give logsumexp(z) - z_1, far from what a second
    # mask m' (z * m') would give.
    xe = np.full((1, dim), np.sqrt(dim), np.float32)
    np.save(os.path.join(d, "xe.npy"), xe)
    labels = os.path.join(d, "labels.npy")
    np.save(labels, np.ones(1, np.int64))
    _, pe, out = tcc_train(tcc, d, onnx_path, xe, np.zeros(1, np.int64), tag="ce",
                           loss="cross_entropy",
                           extra=["--eval-data", "x=" + os.path.join(d, "xe.npy"),
                                  "--eval-data", "labels=" + labels])
    z = xe[0].astype(np.float64) * pe["w"].astype(np.float64)
    want = float(np.log(np.sum(np.exp(z - z.max()))) + z.max() - z[1])
    line = [l for l in out.splitlines() if l.startswith("eval:")]
    if not line or abs(float(line[0].split("loss")[1]) - want) > 1e-4 * max(1, want):
        sys.exit(f"{name}: evaluation should not drop: expected loss {want:.6f}, got {line}")
    print(f"{name}: p={p}: dropped {dropped1.sum()} and {dropped2.sum()} of {dim} "
          f"(expected {dim * p:.0f} +- {sd:.0f}), {both} in both steps, kept scaled by "
          f"{keep:.6f}; reruns and a resumed run identical; evaluation without dropout")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    t, w = args.tcc, args.work
    parity_case(t, w, "gelu_erf", seq(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 4)),
                (8, 6), ["Erf"])
    parity_case(t, w, "gelu_tanh",
                seq(nn.Linear(6, 8), nn.GELU(approximate="tanh"), nn.Linear(8, 4)),
                (8, 6), ["Tanh"])
    parity_case(t, w, "layer_norm", seq(nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 4)),
                (8, 6), ["LayerNormalization"])
    parity_case(t, w, "layer_norm_2d", seq(nn.Linear(6, 8), nn.LayerNorm([3, 8])),
                (8, 3, 6), ["LayerNormalization"])
    # A trained exponent is the one parameter tcc's default leaves constant
    # (Pow's exponent is, in exported models, a constant such as RMSNorm's
    # 2.0): --trainable names what trains.
    parity_case(t, w, "elementwise", Elementwise(), (8, 6),
                ["Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Pow", "Neg"],
                compile_extra=["--trainable", "fc.*,e"])
    parity_case(t, w, "unary_family", UnaryFamily(), (16, 6),
                ["Abs", "Sign", "Floor", "Ceil", "Round", "Sin", "Cos", "HardSwish",
                 "HardSigmoid", "LeakyRelu", "Elu", "Selu", "Softplus", "Clip"])
    parity_case(t, w, "more_unary", MoreUnary(), (16, 6),
                ["Tan", "Asin", "Acos", "Atan", "Celu"])
    parity_case(t, w, "renamed_unary", Renamed(), (16, 6),
                ["Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softsign",
                 "ThresholdedRelu", "Shrink"], rewrite=rename_stand_ins)
    parity_case(t, w, "fmod", Remainder(), (8, 6), ["Mod"],
                compile_extra=["--trainable", "fc.*,d"])
    parity_case(t, w, "reductions", Reductions(), (8, 6),
                ["ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceProd", "CumSum"])
    parity_case(t, w, "norm_at_zero", NormAtZero(), (8, 6), ["ReduceL2"],
                compile_extra=["--freeze", "mask"])
    parity_case(t, w, "renamed_reductions", RenamedReductions(), (8, 6),
                ["ReduceSumSquare", "ReduceLogSum"], rewrite=rename_reductions)
    parity_case(t, w, "feed_forward_dropout0", FeedForward("none", 0.0), (8, 8),
                ["Erf", "Dropout", "LayerNormalization"], training=True)
    parity_case(t, w, "feed_forward_tanh", FeedForward("tanh"), (4, 3, 8),
                ["Tanh", "LayerNormalization"])
    parity_case(t, w, "transformer_encoder_layer", EncoderLayer(0.0), (4, 5, 16),
                ["Erf", "Dropout", "LayerNormalization", "Softmax"], training=True)
    dropout_case(t, w)


if __name__ == "__main__":
    main()

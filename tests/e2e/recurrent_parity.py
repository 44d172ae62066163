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
3. The options PyTorch does not export (layout 1, reverse, clip, peepholes,
   input_forget, GRU's linear_before_reset = 0, other activations, opsets 7
   and 22, omitted outputs) on single-node models, run forward by
   tcc-onnx-tests against a NumPy transcription of ONNX's equations.
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
from onnx import TensorProto, helper
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


# --- 3. ONNX's equations in NumPy, for the options PyTorch does not export.

# name: (function of x, alpha, beta; which parameters it reads; defaults).
ACTS = {
    "Sigmoid": (lambda v, a, b: 1 / (1 + np.exp(-v)), "", ()),
    "Tanh": (lambda v, a, b: np.tanh(v), "", ()),
    "Relu": (lambda v, a, b: np.maximum(v, 0), "", ()),
    "Softsign": (lambda v, a, b: v / (1 + np.abs(v)), "", ()),
    "Softplus": (lambda v, a, b: np.log1p(np.exp(v)), "", ()),
    "LeakyRelu": (lambda v, a, b: np.where(v >= 0, v, a * v), "a", (0.01,)),
    "Elu": (lambda v, a, b: np.where(v >= 0, v, a * np.expm1(np.minimum(v, 0))), "a", (1.0,)),
    "HardSigmoid": (lambda v, a, b: np.clip(a * v + b, 0, 1), "ab", (0.2, 0.5)),
    "ThresholdedRelu": (lambda v, a, b: np.where(v > a, v, 0), "a", ()),
    "Affine": (lambda v, a, b: a * v + b, "ab", ()),
    "ScaledTanh": (lambda v, a, b: a * np.tanh(b * v), "ab", ()),
}


def activations(names, alphas, betas):
    """The functions with their parameters: activation_alpha and _beta are
    consumed in order by the functions that read them (onnxruntime's
    reading); a function past the end of the list takes its default."""
    alphas, betas, out = list(alphas), list(betas), []
    for n in names:
        fn, reads, defaults = ACTS[n]
        a = (alphas.pop(0) if alphas else defaults[0]) if "a" in reads else 0.0
        b = (betas.pop(0) if betas else defaults[1]) if "b" in reads else 0.0
        out.append(lambda v, fn=fn, a=a, b=b: fn(v, a, b))
    return out
NUM_ACTS = {"RNN": 1, "GRU": 2, "LSTM": 3}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
                "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def reference(kind, attrs, x, w, r, b=None, h0=None, c0=None, p=None):
    """Y, Y_h, Y_c of one RNN/GRU/LSTM node, from the operator's equations."""
    layout = attrs.get("layout", 0)
    direction = attrs.get("direction", "forward")
    clip = attrs.get("clip")
    lbr = attrs.get("linear_before_reset", 0)
    coupled = attrs.get("input_forget", 0)
    dirs = 2 if direction == "bidirectional" else 1
    acts = activations(attrs.get("activations", DEFAULT_ACTS[kind] * dirs),
                       attrs.get("activation_alpha", ()), attrs.get("activation_beta", ()))
    if layout:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    steps, batch, _ = x.shape
    hid = r.shape[2]
    gh = GATES[kind] * hid
    y = np.zeros((steps, dirs, batch, hid), np.float64)
    yh = np.zeros((dirs, batch, hid), np.float64)
    yc = np.zeros((dirs, batch, hid), np.float64)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    for d in range(dirs):
        f, g, hf = (acts[d * NUM_ACTS[kind]:(d + 1) * NUM_ACTS[kind]] + [None, None])[:3]
        wd, rd = w[d].astype(np.float64), r[d].astype(np.float64)
        bd = np.zeros(2 * gh) if b is None else b[d].astype(np.float64)
        wb, rb = bd[:gh], bd[gh:]
        pd = np.zeros(3 * hid) if p is None else p[d].astype(np.float64)
        h = np.zeros((batch, hid)) if h0 is None else h0[d].astype(np.float64)
        c = np.zeros((batch, hid)) if c0 is None else c0[d].astype(np.float64)
        reverse = direction == "reverse" or d == 1
        for t in (reversed(range(steps)) if reverse else range(steps)):
            xw = x[t] @ wd.T + wb
            if kind == "RNN":
                h = f(cl(xw + h @ rd.T + rb))
            elif kind == "GRU":
                hr = h @ rd.T + rb
                z = f(cl(xw[:, :hid] + hr[:, :hid]))
                rr = f(cl(xw[:, hid:2 * hid] + hr[:, hid:2 * hid]))
                if lbr:
                    hc = g(cl(xw[:, 2 * hid:] + rr * hr[:, 2 * hid:]))
                else:
                    hc = g(cl(xw[:, 2 * hid:] + (rr * h) @ rd[2 * hid:].T + rb[2 * hid:]))
                h = (1 - z) * hc + z * h
            else:
                pre = xw + h @ rd.T + rb
                i = f(cl(pre[:, :hid] + pd[:hid] * c))
                if coupled:
                    fg = 1 - i
                else:
                    fg = f(cl(pre[:, 2 * hid:3 * hid] + pd[2 * hid:] * c))
                c = fg * c + i * g(cl(pre[:, 3 * hid:]))
                o = f(cl(pre[:, hid:2 * hid] + pd[hid:2 * hid] * c))
                h = o * hf(cl(c))
            y[t, d] = h
        yh[d], yc[d] = h, c
    if layout:
        y, yh, yc = y.transpose(2, 0, 1, 3), yh.transpose(1, 0, 2), yc.transpose(1, 0, 2)
    return [v.astype(np.float32) for v in (y, yh, yc)]


# name, op, opset, attributes, the inputs given (ONNX's input names), the
# outputs wanted (None: omitted).
CASES = [
    ("lstm_bidir_batchwise_clip", "LSTM", 14,
     dict(direction="bidirectional", layout=1, clip=0.8),
     ["X", "W", "R", "B", "", "initial_h", "initial_c", "P"], ["Y", "Y_h", "Y_c"]),
    ("lstm_reverse_coupled_acts", "LSTM", 22,
     dict(direction="reverse", input_forget=1,
          activations=["Sigmoid", "Softsign", "Softplus"]),
     ["X", "W", "R", "B", "", "", "", "P"], [None, "Y_h", "Y_c"]),
    ("gru_bidir_batchwise_reset_after", "GRU", 14,
     dict(direction="bidirectional", layout=1, clip=1.0,
          activations=["Sigmoid", "Tanh", "Softsign", "Relu"]),
     ["X", "W", "R", "B", "", "initial_h"], ["Y", "Y_h"]),
    ("gru_reverse_linear_before_reset", "GRU", 7,
     dict(direction="reverse", linear_before_reset=1),
     ["X", "W", "R", "B"], ["Y", "Y_h"]),
    ("rnn_bidir_acts", "RNN", 22,
     dict(direction="bidirectional", activations=["Tanh", "Relu"]),
     ["X", "W", "R", "B", "", "initial_h"], ["Y", "Y_h"]),
    # Parameters: given in order, or the defaults once the lists run out.
    ("rnn_bidir_leaky_hardsigmoid", "RNN", 14,
     dict(direction="bidirectional", activations=["LeakyRelu", "HardSigmoid"],
          activation_alpha=[0.2, 0.3], activation_beta=[0.4]),
     ["X", "W", "R", "B"], ["Y", "Y_h"]),
    ("gru_elu_scaledtanh", "GRU", 14,
     dict(activations=["Elu", "ScaledTanh"], activation_alpha=[0.5, 1.5],
          activation_beta=[0.7]),
     ["X", "W", "R", "B", "", "initial_h"], ["Y", "Y_h"]),
    ("lstm_affine_thresholded", "LSTM", 14,
     dict(activations=["Sigmoid", "Affine", "ThresholdedRelu"],
          activation_alpha=[0.5, 0.1], activation_beta=[0.2]),
     ["X", "W", "R", "B", "", "initial_h", "initial_c"], ["Y", "Y_h", "Y_c"]),
    ("rnn_leaky_default", "RNN", 14,
     dict(direction="reverse", activations=["LeakyRelu"]),
     ["X", "W", "R"], ["Y"]),
]


def write_case(root, name, kind, opset, attrs, inputs, outputs, rng):
    steps, batch, feat, hid = 5, 3, 4, 6
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    gh = GATES[kind] * hid
    layout = attrs.get("layout", 0)
    state = [batch, dirs, hid] if layout else [dirs, batch, hid]
    shapes = {"X": [batch, steps, feat] if layout else [steps, batch, feat],
              "W": [dirs, gh, feat], "R": [dirs, gh, hid], "B": [dirs, 2 * gh],
              "initial_h": state, "initial_c": state, "P": [dirs, 3 * hid]}
    given = {n: (rng.randn(*shapes[n]) * 0.6).astype(np.float32) for n in inputs if n}
    keys = {"X": "x", "W": "w", "R": "r", "B": "b", "initial_h": "h0",
            "initial_c": "c0", "P": "p"}
    want = reference(kind, attrs, **{keys[n]: v for n, v in given.items()})
    out_names = [o or "" for o in outputs]
    node = helper.make_node(kind, inputs, out_names, hidden_size=hid, **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape) for n, v in given.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, want[i].shape)
         for i, o in enumerate(outputs) if o])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    d = os.path.join(root, "node", "test_" + name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (n, v) in enumerate(given.items()):
        t = onnx.numpy_helper.from_array(v, n)
        open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb").write(t.SerializeToString())
    for i, o in enumerate([o for o in outputs if o]):
        t = onnx.numpy_helper.from_array(want[outputs.index(o)], o)
        open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb").write(t.SerializeToString())


def options(onnx_tests, work):
    root = os.path.join(work, "reference")
    rng = np.random.RandomState(2)
    for case in CASES:
        write_case(root, *case, rng)
    out = run([onnx_tests, "--data", root, "--suites", "node", "--verbose"])
    last = out.strip().splitlines()[-1]
    if last != f"{len(CASES)} passed, 0 failed, 0 unsupported":
        sys.exit(f"reference cases: {last}\n{out}")
    print(f"options: {len(CASES)} single-node models match ONNX's equations "
          f"({', '.join(c[0] for c in CASES)})")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--onnx-tests", required=True, help="tcc-onnx-tests")
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
    options(args.onnx_tests, args.work)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""--ignore-index and --label-smoothing against PyTorch's CrossEntropyLoss.

Two small models, exported with torch.onnx.export, compiled by tcc and
trained for 30 steps (--no-shuffle: batches in file order) by tcc and by
PyTorch with nn.CrossEntropyLoss(ignore_index=I, label_smoothing=S):
  * a classifier (an MLP, labels [N]), a quarter of its labels -100;
  * a tiny token model (embedding, a linear layer per position, logits
    [B, T, V]), the padded tail of each sequence labelled -100 (as a
    language-model batch of uneven documents is).
Each runs with the fused regions (the generated loss kernels) and with
--no-fuse (the library kernels); one token run ignores a class index
(--ignore-index 0) instead. The heads and losses are fused by cut
cross-entropy (tcc.linear_cross_entropy) by default; one token run has
--no-cut-ce (the matmul and the softmax_cross_entropy kernels).
Last, a head written as MatMul by a [D, V] weight (300 classes, blocks of
128) trains 3 SGD steps alike with and without cut cross-entropy. The per-step losses and the trained parameters
must agree (rtol 1e-4), and evaluation skips the ignored positions.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

STEPS, BATCH, LR = 30, 8, 1e-2


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n"
                 f"{p.stdout}\n{p.stderr}")
    return p.stdout


class TokenModel(nn.Module):
    def __init__(self, vocab=11, dim=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, x):
        return self.head(torch.tanh(self.emb(x)))


def classifier_data(rng):
    x = rng.randn(48, 12).astype(np.float32)
    y = rng.randint(0, 5, size=48).astype(np.int64)
    y[rng.rand(48) < 0.25] = -100
    return x, y


def token_data(rng, vocab=11, t=6):
    x = rng.randint(0, vocab, size=(32, t)).astype(np.int64)
    y = np.roll(x, -1, axis=1)
    for row, length in zip(y, rng.randint(2, t + 1, size=32)):
        row[length:] = -100  # padding after the document's end
    return x, y


def case(tcc, work, name, make, data, ignore, smoothing, fuse, cut=True):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    model = make()
    x, y = data(np.random.RandomState(3))
    if ignore != -100:
        y = np.where(y == -100, ignore, y)
    onnx_path = os.path.join(d, "model.onnx")
    example = torch.from_numpy(x[:2])
    torch.onnx.export(model, example, onnx_path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "n"}},
                      opset_version=17)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)
    art = os.path.join(d, "model.tcc")
    cmd = [tcc, "compile", onnx_path, "-o", art, "--batch", str(BATCH),
           "--optimizer", "adamw", "--lr", str(LR),
           "--label-smoothing", str(smoothing)]
    if ignore != -100:
        cmd += ["--ignore-index", str(ignore)]
    if not fuse:
        cmd.append("--no-fuse")
    # The heads have 5 and 11 classes, below the default threshold (256):
    # fuse them anyway, so the fused op is checked against PyTorch.
    cmd += ["--no-cut-ce"] if not cut else \
        ["--cut-cross-entropy-min-classes", "2", "--cut-cross-entropy-block", "4"]
    run(cmd)
    meta = run([tcc, "inspect", art])
    # Both models end in a Linear head: cut cross-entropy fuses it with the
    # loss unless --no-cut-ce.
    want_cut = "cut_cross_entropy: fused" if cut else "cut_cross_entropy: off"
    if want_cut not in meta:
        sys.exit(f"{name}: `tcc inspect` does not show '{want_cut}':\n{meta}")
    for want in (f"ignore_index: {ignore}", f"label_smoothing: {smoothing:g}"):
        if want not in meta:
            sys.exit(f"{name}: `tcc inspect` does not show '{want}':\n{meta}")
    metrics = os.path.join(d, "metrics.jsonl")
    trained = os.path.join(d, "trained.onnx")
    data_args = ["--data", "x=" + os.path.join(d, "x.npy"),
                 "--data", "labels=" + os.path.join(d, "y.npy")]
    out = run([tcc, "train", art] + data_args +
              ["--steps", str(STEPS), "--no-shuffle", "--no-progress",
               "--metrics", metrics, "--export", trained,
               "--eval-data", "x=" + os.path.join(d, "x.npy"),
               "--eval-data", "labels=" + os.path.join(d, "y.npy")])
    tcc_losses = [json.loads(line)["loss"] for line in open(metrics)]

    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    crit = nn.CrossEntropyLoss(ignore_index=ignore, label_smoothing=smoothing)
    torch_losses = []
    per_epoch = len(x) // BATCH
    for step in range(STEPS):
        b = step % per_epoch
        xb = torch.from_numpy(x[b * BATCH:(b + 1) * BATCH])
        yb = torch.from_numpy(y[b * BATCH:(b + 1) * BATCH])
        opt.zero_grad()
        logits = model(xb)
        loss = crit(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1))
        loss.backward()
        opt.step()
        torch_losses.append(loss.item())
    np.testing.assert_allclose(tcc_losses, torch_losses, rtol=1e-4, atol=1e-6,
                               err_msg=f"{name}: per-step losses differ")
    exported = {t.name: onnx.numpy_helper.to_array(t)
                for t in onnx.load(trained).graph.initializer}
    for k, v in model.state_dict().items():
        ref = v.detach().numpy()
        got = exported.get(k)
        if got is None:  # a Linear on [B, T, D] exports as MatMul by W^T
            got = next(a.T for n, a in exported.items()
                       if n.startswith("onnx::MatMul") and a.T.shape == ref.shape)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-6,
                                   err_msg=f"{name}: parameter {k} differs")

    # Evaluation: the plain cross-entropy and accuracy over the positions
    # that are not ignored.
    with torch.no_grad():
        logits = model(torch.from_numpy(x)).reshape(-1, model_classes(model))
        labels = torch.from_numpy(y).reshape(-1)
        keep = labels != ignore
        eval_loss = nn.functional.cross_entropy(logits[keep], labels[keep])
        accuracy = (logits[keep].argmax(-1) == labels[keep]).double().mean()
    m = re.search(r"eval: \d+ samples, accuracy ([\d.]+)%, loss ([\d.]+)", out)
    if not m or abs(float(m.group(1)) - 100 * accuracy.item()) > 0.006 or \
            abs(float(m.group(2)) - eval_loss.item()) > 2e-4:
        sys.exit(f"{name}: evaluation differs from PyTorch's accuracy "
                 f"{100 * accuracy.item():.2f}% and loss "
                 f"{eval_loss.item():.4f}:\n{out}")
    print(f"{name}: {STEPS} steps match PyTorch (final loss "
          f"{tcc_losses[-1]:.6f})")


def dv_head_case(tcc, work):
    """A head written as MatMul by a [D, V] initializer (not torch's
    transposed Linear) with a bias, 300 classes in blocks of 128, ignored
    positions and label smoothing: three SGD steps (lr 100, so gradients
    show in the parameters) with and without cut cross-entropy agree."""
    from onnx import helper, TensorProto
    d = os.path.join(work, "dv_head")
    os.makedirs(d, exist_ok=True)
    rng = np.random.RandomState(0)
    inits = [onnx.numpy_helper.from_array(a, n) for n, a in (
        ("W1", rng.randn(8, 16).astype(np.float32) * 0.3),
        ("W", rng.randn(16, 300).astype(np.float32) * 0.3),
        ("B", rng.randn(300).astype(np.float32) * 0.1))]
    g = helper.make_graph([
        helper.make_node("MatMul", ["x", "W1"], ["h"]),
        helper.make_node("Tanh", ["h"], ["t"]),
        helper.make_node("MatMul", ["t", "W"], ["m"]),
        helper.make_node("Add", ["m", "B"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 300])],
        inits)
    onnx_path = os.path.join(d, "dv.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              onnx_path)
    y = rng.randint(0, 300, size=64).astype(np.int64)
    y[::7] = -100
    np.save(os.path.join(d, "x.npy"), rng.randn(64, 8).astype(np.float32))
    np.save(os.path.join(d, "y.npy"), y)
    results = {}
    for tag, extra in (("on", ["--cut-cross-entropy-block", "128"]),
                       ("off", ["--no-cut-ce"])):
        art = os.path.join(d, tag + ".tcc")
        run([tcc, "compile", onnx_path, "-o", art, "--batch", "16",
             "--optimizer", "sgd", "--lr", "100", "--label-smoothing", "0.1"]
            + extra)
        want = "cut_cross_entropy: fused" if tag == "on" else \
            "cut_cross_entropy: off"
        if want not in run([tcc, "inspect", art]):
            sys.exit(f"dv_head: `tcc inspect` of {tag} lacks '{want}'")
        metrics = os.path.join(d, tag + ".jsonl")
        out = os.path.join(d, tag + ".out.onnx")
        run([tcc, "train", art, "--data", "x=" + os.path.join(d, "x.npy"),
             "--data", "labels=" + os.path.join(d, "y.npy"), "--steps", "3",
             "--no-shuffle", "--no-progress", "--metrics", metrics,
             "--export", out])
        results[tag] = ([json.loads(l)["loss"] for l in open(metrics)],
                        {t.name: onnx.numpy_helper.to_array(t)
                         for t in onnx.load(out).graph.initializer})
    np.testing.assert_allclose(results["on"][0], results["off"][0], rtol=1e-5,
                               err_msg="dv_head: losses differ")
    for k, ref in results["off"][1].items():
        np.testing.assert_allclose(results["on"][1][k], ref, rtol=0,
                                   atol=1e-3 * float(np.max(np.abs(ref))),
                                   err_msg=f"dv_head: {k} differs")
    print("dv_head: [D, V] head, 3 blocks: 3 SGD steps equal --no-cut-ce's")


def model_classes(model):
    return 11 if isinstance(model, TokenModel) else 5


def classifier():
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    for fuse in (True, False):
        tag = "fused" if fuse else "library"
        case(args.tcc, args.work, "classifier_" + tag, classifier,
             classifier_data, -100, 0.1, fuse)
        case(args.tcc, args.work, "tokens_" + tag, TokenModel, token_data,
             -100, 0.1, fuse)
    case(args.tcc, args.work, "tokens_ignore_class", TokenModel, token_data,
         0, 0.0, True)
    case(args.tcc, args.work, "tokens_no_cut_ce", TokenModel, token_data,
         -100, 0.1, True, cut=False)
    dv_head_case(args.tcc, args.work)


if __name__ == "__main__":
    main()

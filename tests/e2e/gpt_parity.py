#!/usr/bin/python3
"""The GPT-style character model against PyTorch, end to end.

examples/make_gpt.py's model (token + position embedding, 2 pre-norm
nn.TransformerEncoderLayer blocks with GELU and a causal mask, d=128, 4 heads,
T=64, vocabulary 256) is exported with torch.onnx.export in training mode and
trained by tcc on the bundled text through `--tokens` (--no-shuffle: window k
of the corpus is sample k). Checks:
  1. the loss and EVERY parameter gradient of one step equal PyTorch's on the
     same weights and batch (rtol 1e-3, relative to each tensor's largest
     gradient); tcc's gradient is read from one SGD step with a large lr;
  2. 20 AdamW steps track PyTorch's loss curve.
The head and the loss are fused by default (cut cross-entropy: the logits
are never stored); the one step is also run with --no-cut-ce, and the two
must agree with each other (loss and every gradient, rtol 1e-4).
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
from make_gpt import CharGPT  # noqa: E402

BATCH, T, LR_PROBE = 4, 64, 1000.0


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def batches(corpus, steps):
    """The --no-shuffle batches of the token feeder: window k = tokens
    [k*T, k*T + T]."""
    windows = (len(corpus) - 1) // T
    per_epoch = windows // BATCH
    for s in range(steps):
        first = (s % per_epoch) * BATCH
        w = np.stack([corpus[(first + k) * T:(first + k) * T + T + 1]
                      for k in range(BATCH)]).astype(np.int64)
        yield torch.from_numpy(w[:, :T]), torch.from_numpy(w[:, 1:])


def tcc_run(tcc, work, tag, onnx_path, corpus_path, steps, opt):
    art = os.path.join(work, tag + ".tcc")
    run([tcc, "compile", onnx_path, "-o", art, "--batch", str(BATCH),
         "--freeze", "mask"] + opt)
    metrics = os.path.join(work, tag + ".jsonl")
    out = os.path.join(work, tag + ".onnx")
    run([tcc, "train", art, "--tokens", corpus_path, "--steps", str(steps),
         "--no-shuffle", "--no-progress", "--metrics", metrics, "--export", out])
    losses = [json.loads(l)["loss"] for l in open(metrics)]
    params = {t.name: onnx.numpy_helper.to_array(t)
              for t in onnx.load(out).graph.initializer}
    return losses, params


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = CharGPT(t=T)
    model.train()
    init = {k: v.detach().clone() for k, v in model.state_dict().items()}
    onnx_path = os.path.join(args.work, "gpt.onnx")
    torch.onnx.export(model, torch.randint(0, 256, (2, T)), onnx_path,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    corpus = np.frombuffer(open(args.corpus, "rb").read(), dtype=np.uint8)
    crit = nn.CrossEntropyLoss()

    # 1. One step: loss and every parameter gradient.
    losses, p1 = tcc_run(args.tcc, args.work, "probe", onnx_path, args.corpus, 1,
                         ["--optimizer", "sgd", "--lr", str(LR_PROBE),
                          "--weight-decay", "0"])
    x, y = next(batches(corpus, 1))
    model.zero_grad()
    logits = model(x)
    loss = crit(logits.reshape(-1, 256), y.reshape(-1))
    loss.backward()
    np.testing.assert_allclose(losses[0], loss.item(), rtol=1e-4)
    worst, worst_name = 0.0, ""
    named = dict(model.named_parameters())
    for name, p in named.items():
        g_ref = p.grad.numpy()
        g_tcc = (init[name].numpy() - p1[name]) / LR_PROBE
        scale = float(np.max(np.abs(g_ref))) or 1.0
        rel = float(np.max(np.abs(g_tcc - g_ref))) / scale
        if rel > worst:
            worst, worst_name = rel, name
        if rel > 1e-3:
            sys.exit(f"gradient of {name} differs: max |diff| / max |grad| = {rel:.2e}")
    print(f"step 1: loss {losses[0]:.6f} (torch {loss.item():.6f}); "
          f"{len(named)} parameter gradients match, worst {worst:.2e} ({worst_name})")

    # 1b. The same step without cut cross-entropy: the fused head and loss
    # compute what the matmul and the library loss do.
    losses_off, p1_off = tcc_run(
        args.tcc, args.work, "probe_no_cut_ce", onnx_path, args.corpus, 1,
        ["--optimizer", "sgd", "--lr", str(LR_PROBE), "--weight-decay", "0",
         "--no-cut-ce"])
    np.testing.assert_allclose(losses[0], losses_off[0], rtol=1e-5)
    worst = 0.0
    for name in named:
        g_on = (init[name].numpy() - p1[name]) / LR_PROBE
        g_off = (init[name].numpy() - p1_off[name]) / LR_PROBE
        scale = float(np.max(np.abs(g_off))) or 1.0
        rel = float(np.max(np.abs(g_on - g_off))) / scale
        worst = max(worst, rel)
        if rel > 1e-4:
            sys.exit(f"--no-cut-ce: gradient of {name} differs: {rel:.2e}")
    print(f"step 1 with --no-cut-ce: loss {losses_off[0]:.6f}; gradients "
          f"equal the fused head's within {worst:.2e}")

    # 2. 20 AdamW steps track PyTorch.
    steps = 20
    tcc_losses, _ = tcc_run(args.tcc, args.work, "adamw", onnx_path, args.corpus,
                            steps, ["--optimizer", "adamw", "--lr", "1e-3"])
    model.load_state_dict(init)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ref = []
    for xb, yb in batches(corpus, steps):
        opt.zero_grad()
        l = crit(model(xb).reshape(-1, 256), yb.reshape(-1))
        l.backward()
        opt.step()
        ref.append(l.item())
    np.testing.assert_allclose(tcc_losses, ref, rtol=2e-3,
                               err_msg="AdamW loss curves diverge")
    print(f"20 AdamW steps: loss {tcc_losses[0]:.4f} -> {tcc_losses[-1]:.4f} "
          f"(torch {ref[0]:.4f} -> {ref[-1]:.4f}), max rel diff "
          f"{max(abs(a - b) / abs(b) for a, b in zip(tcc_losses, ref)):.2e}")


if __name__ == "__main__":
    main()

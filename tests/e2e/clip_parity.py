#!/usr/bin/python3
"""--clip-grad-norm C against torch.nn.utils.clip_grad_norm_.

A torch.nn MLP is exported with torch.onnx.export, compiled by tcc with
--clip-grad-norm C and trained for 30 steps (--no-shuffle, so batches come
in file order) by tcc and by PyTorch, which clips with clip_grad_norm_ before
each optimizer step. Per-step losses, the per-step grad_norm of --metrics
(the norm before clipping) and the exported parameters must agree. Cases:
SGD and AdamW with a C that clips nearly every step and one that never
clips, --grad-accum 2 against PyTorch accumulating two micro-batches (the
accumulated gradient is clipped), and --track-grad-norm (the norm without
clipping). Without either flag the metrics carry "grad_norm": null.
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

BATCH, SAMPLES, STEPS = 8, 48, 30


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def setup(work):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 8),
                          nn.ReLU(), nn.Linear(8, 4))
    onnx_path = os.path.join(work, "model.onnx")
    torch.onnx.export(model, torch.randn(2, 12), onnx_path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
                      opset_version=17)
    rng = np.random.RandomState(1)
    x = (3 * rng.randn(SAMPLES, 12)).astype(np.float32)
    y = rng.randint(0, 4, size=SAMPLES).astype(np.int64)
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "y.npy"), y)
    return model.state_dict(), onnx_path, x, y


def tcc_run(tcc, work, onnx_path, name, flags):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    art = os.path.join(d, "model.tcc")
    run([tcc, "compile", onnx_path, "-o", art, "--batch", str(BATCH)] + flags)
    trained = os.path.join(d, "trained.onnx")
    metrics = os.path.join(d, "metrics.jsonl")
    run([tcc, "train", art, "--data", "x=" + os.path.join(work, "x.npy"),
         "--data", "labels=" + os.path.join(work, "y.npy"), "--steps", str(STEPS),
         "--no-shuffle", "--no-progress", "--metrics", metrics, "--export", trained])
    lines = [json.loads(l) for l in open(metrics)]
    params = {t.name: onnx.numpy_helper.to_array(t)
              for t in onnx.load(trained).graph.initializer}
    return lines, params


def torch_run(init, x, y, optimizer, lr, clip, accum):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 8),
                          nn.ReLU(), nn.Linear(8, 4))
    model.load_state_dict(init)
    if optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr)
    crit = nn.CrossEntropyLoss()
    losses, norms = [], []
    micro = SAMPLES // BATCH
    for step in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for j in range(accum):
            b = (step * accum + j) % micro
            xb = torch.from_numpy(x[b * BATCH:(b + 1) * BATCH])
            yb = torch.from_numpy(y[b * BATCH:(b + 1) * BATCH])
            l = crit(model(xb), yb)
            (l / accum).backward()
            total += l.item()
        # clip_grad_norm_ with an infinite bound only measures.
        n = nn.utils.clip_grad_norm_(model.parameters(),
                                     clip if clip else float("inf"))
        opt.step()
        losses.append(total / accum)
        norms.append(float(n))
    return losses, norms, model.state_dict()


def compare(name, lines, params, ref_losses, ref_norms, ref_params, clip):
    losses = [l["loss"] for l in lines]
    norms = [l["grad_norm"] for l in lines]
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4, atol=1e-6,
                               err_msg=f"{name}: per-step losses differ")
    np.testing.assert_allclose(norms, ref_norms, rtol=1e-4, atol=1e-6,
                               err_msg=f"{name}: per-step grad_norm differs")
    worst = 0.0
    for k, v in ref_params.items():
        ref = v.detach().numpy()
        np.testing.assert_allclose(params[k], ref, rtol=1e-4, atol=1e-6,
                                   err_msg=f"{name}: parameter {k} differs")
        worst = max(worst, float(np.max(np.abs(params[k] - ref) /
                                        (np.abs(ref) + 1e-6))))
    clipped = sum(n > clip for n in ref_norms) if clip else 0
    print(f"{name}: {STEPS} steps match PyTorch ({clipped} clipped, grad_norm "
          f"{min(ref_norms):.3f}..{max(ref_norms):.3f}, max rel param diff "
          f"{worst:.2e})")
    return clipped


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(1)
    init, onnx_path, x, y = setup(args.work)
    cases = [  # name, optimizer, lr, C (0: --track-grad-norm), grad-accum
        ("sgd_clip", "sgd", 0.1, 0.5, 1),
        ("adamw_clip", "adamw", 1e-2, 0.5, 1),
        ("sgd_noclip", "sgd", 0.1, 1000.0, 1),
        ("adamw_noclip", "adamw", 1e-2, 1000.0, 1),
        ("sgd_clip_accum2", "sgd", 0.1, 0.5, 2),
        ("adamw_clip_accum2", "adamw", 1e-2, 0.5, 2),
        ("adamw_track", "adamw", 1e-2, 0.0, 1),
    ]
    for name, optimizer, lr, clip, accum in cases:
        flags = ["--optimizer", optimizer, "--lr", str(lr), "--grad-accum", str(accum)]
        flags += ["--clip-grad-norm", str(clip)] if clip else ["--track-grad-norm"]
        lines, params = tcc_run(args.tcc, args.work, onnx_path, name, flags)
        ref_losses, ref_norms, ref_params = torch_run(init, x, y, optimizer, lr,
                                                      clip, accum)
        clipped = compare(name, lines, params, ref_losses, ref_norms,
                          ref_params, clip)
        # The clipping cases must clip (most steps), the others never.
        if clip and clip < 1000:
            assert clipped >= STEPS // 2, f"{name}: only {clipped} steps clipped"
        else:
            assert clipped == 0
    # fp16 with loss scaling: the norm is of the unscaled gradients (the
    # scale is 65536) and the clipped run follows PyTorch's fp32 one to
    # half-precision rounding.
    lines, _ = tcc_run(args.tcc, args.work, onnx_path, "sgd_clip_fp16",
                       ["--optimizer", "sgd", "--lr", "0.1",
                        "--clip-grad-norm", "0.5", "--precision", "fp16"])
    ref_losses, ref_norms, _ = torch_run(init, x, y, "sgd", 0.1, 0.5, 1)
    assert not any(l.get("skipped") for l in lines), lines
    np.testing.assert_allclose([l["grad_norm"] for l in lines], ref_norms,
                               rtol=2e-2, err_msg="fp16: grad_norm differs")
    np.testing.assert_allclose([l["loss"] for l in lines], ref_losses,
                               rtol=2e-2, err_msg="fp16: losses differ")
    print("sgd_clip_fp16: grad_norm and losses follow PyTorch's fp32 run "
          "(unscaled norm, loss scale 65536)")
    # Without --clip-grad-norm or --track-grad-norm the norm is not computed.
    lines, _ = tcc_run(args.tcc, args.work, onnx_path, "plain",
                       ["--optimizer", "sgd", "--lr", "0.1"])
    assert all(l["grad_norm"] is None for l in lines), lines[0]
    print("plain: grad_norm is null in every metrics line")


if __name__ == "__main__":
    main()

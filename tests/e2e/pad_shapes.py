#!/usr/bin/python3
"""--pad-multiple is numerically invisible: training with padded GEMMs gives
the losses and parameters of training without.

Each model is compiled with --pad-multiple=0 and with padding, then trained on
the same batches (--no-shuffle); the per-step losses and the exported
parameters are compared.
  * the example MLP (64-128-128-10, digits data, batch 32), multiple 64 (the
    10 classes and the batch) and 24 (every M, N and K), and 64 with GEMM
    epilogues (the head's bias in its padded GEMM);
  * a 784-1024-1024-10 MLP on synthetic data, multiple 64 (784, 10 and the
    batch of 32);
  * the GPT-style model (d=128, 4 heads of 32, T=64, vocabulary 256),
    multiple 24 (every GEMM dimension: 32 -> 48, 64 -> 72, 128 -> 144, ...).
Zero padding only adds exact zeros to the dot products, but OpenBLAS blocks
a padded K differently and sums in another order, and every padded M or N of
the forward is a padded K of the backward, so results agree to float
rounding, not to the bit. Measured: losses equal to <= 2.4e-7, parameters to
<= 2.1e-6 after 10 AdamW steps (MLP) and <= 6e-8 after 3 SGD steps (GPT).
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
from make_gpt import CharGPT  # noqa: E402
from make_mlp import make_mlp  # noqa: E402


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def train(tcc, work, tag, model, compile_opts, data_opts, steps):
    art = os.path.join(work, tag + ".tcc")
    run([tcc, "compile", model, "-o", art] + compile_opts)
    # Zero pads are slice_grad kernels; compare() checks that padding added some.
    pads = run([tcc, "compile", model, "--emit=schedule"] +
               compile_opts).count("slice_grad(")
    metrics = os.path.join(work, tag + ".jsonl")
    out = os.path.join(work, tag + ".onnx")
    run([tcc, "train", art, "--steps", str(steps), "--no-shuffle",
         "--no-progress", "--metrics", metrics, "--export", out] + data_opts)
    losses = [json.loads(l)["loss"] for l in open(metrics)]
    params = {t.name: onnx.numpy_helper.to_array(t)
              for t in onnx.load(out).graph.initializer}
    return np.array(losses), params, pads


def compare(name, base, padded, rtol, atol):
    """Losses to rtol 1e-5; parameters to rtol/atol (AdamW divides by
    sqrt(v): where a gradient is ~0, summation-order rounding moves the step
    by up to ~lr*1e-3, as in grad_accum.py)."""
    (bl, bp, bpads), (pl, pp, ppads) = base, padded
    if ppads <= bpads:
        sys.exit(f"{name}: nothing was padded ({ppads} vs {bpads} slice_grad)")
    np.testing.assert_allclose(pl, bl, rtol=1e-5, atol=1e-6,
                               err_msg=f"{name}: losses differ")
    worst, identical = 0.0, True
    for k, v in bp.items():
        np.testing.assert_allclose(pp[k], v, rtol=rtol, atol=atol,
                                   err_msg=f"{name}: parameter {k} differs")
        finite = np.isfinite(v)  # the frozen causal mask holds -inf
        if finite.any():
            worst = max(worst, float(np.max(np.abs(pp[k][finite] - v[finite]))))
        identical &= bool(np.array_equal(pp[k], v))
    identical &= bool(np.array_equal(pl, bl))
    print(f"{name}: {ppads - bpads} pads, {len(bl)} steps, max |loss diff| "
          f"{float(np.max(np.abs(pl - bl))):.2e}, max |param diff| {worst:.2e}"
          f"{' (bit-identical)' if identical else ''}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    ex, tcc, work = args.examples, args.tcc, args.work
    adamw = ["--optimizer", "adamw", "--lr", "0.003"]

    # The example MLP on the digits data.
    digits = ["--data", "x=" + os.path.join(ex, "digits", "train_x.npy"),
              "--data", "labels=" + os.path.join(ex, "digits", "train_y.npy")]
    mlp = os.path.join(ex, "mlp.onnx")
    base = train(tcc, work, "mlp0", mlp, ["--batch", "32", "--pad-multiple=0"] +
                 adamw, digits, 10)
    for m in (64, 24):
        compare(f"mlp 64-128-128-10, multiple {m}", base,
                train(tcc, work, f"mlp{m}", mlp,
                      ["--batch", "32", f"--pad-multiple={m}"] + adamw,
                      digits, 10), 1e-4, 1e-5)
    # With GEMM epilogues: the head's bias is added in the padded GEMM's
    # epilogue (zero-padded to its 64 columns) and the loss reads the
    # product through the slice that drops the pad columns.
    ep = ["--batch", "32", "--gemm-epilogue"] + adamw
    compare("mlp 64-128-128-10, epilogues, multiple 64",
            train(tcc, work, "mlpep0", mlp, ep + ["--pad-multiple=0"], digits,
                  10),
            train(tcc, work, "mlpep64", mlp, ep + ["--pad-multiple=64"],
                  digits, 10), 1e-4, 1e-5)

    # bf16 with GEMM epilogues (what --target cuda does): the head's 10
    # classes pad to 16, its bf16 loss gradient is padded inside the loss's
    # fused region and the weight-gradient GEMM sums the head's bias gradient
    # from it (tcc-mixed-precision, tcc-gemm-epilogue). Padding changes the
    # GEMMs' summation order and bf16 rounds it, so parameters drift apart by
    # ~1e-2 in 10 AdamW steps; losses agree to ~5e-4 and the head's bias,
    # whose gradient is the rewritten sum, to ~5e-5 (a wrong sum moves it by
    # the learning rate, 3e-3, per step).
    bf = ["--batch", "32", "--precision", "bf16", "--gemm-epilogue"] + adamw
    (bl, bp, _), (pl, pp, _) = (
        train(tcc, work, "mlpbf0", mlp, bf + ["--pad-multiple=0"], digits, 10),
        train(tcc, work, "mlpbf8", mlp, bf + ["--pad-multiple=8"], digits, 10))
    np.testing.assert_allclose(pl, bl, rtol=5e-3,
                               err_msg="mlp bf16: losses differ")
    np.testing.assert_allclose(pp["4.bias"], bp["4.bias"], rtol=0, atol=1e-3,
                               err_msg="mlp bf16: the head's bias differs")
    print(f"mlp bf16, multiple 8: max |loss diff| "
          f"{float(np.max(np.abs(pl - bl))):.2e}, head bias "
          f"{float(np.max(np.abs(pp['4.bias'] - bp['4.bias']))):.2e}")

    # 784-1024-1024-10 on synthetic data.
    torch.manual_seed(0)
    big = os.path.join(work, "mlp784.onnx")
    torch.onnx.export(make_mlp([784, 1024, 1024, 10]), torch.randn(2, 784), big,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17)
    rng = np.random.default_rng(0)
    np.save(os.path.join(work, "x784.npy"),
            rng.standard_normal((128, 784)).astype(np.float32))
    np.save(os.path.join(work, "y784.npy"), rng.integers(0, 10, 128))
    synth = ["--data", "x=" + os.path.join(work, "x784.npy"),
             "--data", "labels=" + os.path.join(work, "y784.npy")]
    sgd = ["--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9"]
    compare("mlp 784-1024-1024-10, multiple 64",
            train(tcc, work, "big0", big, ["--batch", "32", "--pad-multiple=0"]
                  + sgd, synth, 4),
            train(tcc, work, "big64", big, ["--batch", "32", "--pad-multiple=64"]
                  + sgd, synth, 4), 1e-5, 1e-6)

    # The GPT-style model on the bundled text.
    gpt = os.path.join(work, "gpt.onnx")
    model = CharGPT(t=64)
    model.train()
    torch.onnx.export(model, torch.randint(0, 256, (2, 64)), gpt,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    text = ["--tokens", os.path.join(ex, "text", "licenses.txt")]
    # SGD: the key projection's bias has an exactly-zero gradient (softmax
    # ignores a shift of every score), so AdamW would turn its rounding noise
    # into steps of +-lr whose signs any change of summation order flips.
    opts = ["--batch", "4", "--freeze", "mask", "--optimizer", "sgd",
            "--lr", "0.05", "--momentum", "0.9"]
    base = train(tcc, work, "gpt0", gpt, opts + ["--pad-multiple=0"], text, 3)
    for m in (24,):
        compare(f"gpt, multiple {m}", base,
                train(tcc, work, f"gpt{m}", gpt, opts + [f"--pad-multiple={m}"],
                      text, 3), 1e-5, 1e-6)


if __name__ == "__main__":
    main()

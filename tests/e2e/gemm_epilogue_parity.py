#!/usr/bin/python3
"""End to end against PyTorch with tcc-gemm-epilogue (--gemm-epilogue).

An MLP on 3-D inputs (rows = batch x positions) with a tanh GELU, a ReLU and
biases, exported by torch.onnx.export: with the pass, every layer is one
tcc.matmul_epilogue (bias_gelu_tanh_aux, bias_relu, bias), the GELU's
backward is dgelu_tanh_bgrad and the other bias gradients are folded into
the weight gradients; the compiled IR is checked for each. Trained for 10
AdamW steps by tcc (with and without the pass) and PyTorch: per-step losses
and exported parameters agree (rtol 1e-4), and in fp32 the fused kernels
give the unfused run's losses to 1e-6. bf16 and fp16 runs with and
without the pass agree within 16-bit rounding.
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

BATCH, T, SAMPLES, STEPS, LR = 4, 6, 16, 10, 1e-2


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def tcc_train(tcc, d, onnx_path, tag, flags):
    art = os.path.join(d, f"{tag}.tcc")
    run([tcc, "compile", onnx_path, "-o", art, "--batch", str(BATCH), "--loss", "mse",
         "--optimizer", "adamw", "--lr", str(LR)] + flags)
    trained = os.path.join(d, f"{tag}.onnx")
    metrics = os.path.join(d, f"{tag}.jsonl")
    run([tcc, "train", art, "--data", "x=" + os.path.join(d, "x.npy"),
         "--data", "labels=" + os.path.join(d, "y.npy"), "--steps", str(STEPS),
         "--no-shuffle", "--no-progress", "--metrics", metrics, "--export", trained])
    losses = [json.loads(l)["loss"] for l in open(metrics)]
    params = {t.name: onnx.numpy_helper.to_array(t)
              for t in onnx.load(trained).graph.initializer}
    return losses, params


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    d = args.work
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.GELU(approximate="tanh"),
                          nn.Linear(16, 24), nn.ReLU(), nn.Linear(24, 5))
    onnx_path = os.path.join(d, "model.onnx")
    torch.onnx.export(model, torch.randn(2, T, 12), onnx_path, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
                      opset_version=17, do_constant_folding=False)
    rng = np.random.RandomState(1)
    x = rng.randn(SAMPLES, T, 12).astype(np.float32)
    y = rng.randn(SAMPLES, T, 5).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)

    # The pass forms every epilogue this model has (without tcc-fuse's
    # column sums, which take the ReLU layer's bias gradient into the ReLU
    # gradient's region; the trained runs below have them).
    ir = run([args.tcc, "compile", onnx_path, "--batch", str(BATCH), "--loss", "mse",
              "--gemm-epilogue", "--fuse-column-sums=false", "--emit=optimized"])
    train_step = ir[ir.index("func.func @train_step"):]
    for ep in ["bias_gelu_tanh_aux", "bias_relu", "bias", "dgelu_tanh_bgrad",
               "bgrad_lhs"]:
        if f'epilogue = "{ep}"' not in train_step:
            sys.exit(f"@train_step has no {ep} epilogue:\n{train_step}")
    for op in ["tcc.reduce_sum", "tcc.gelu_grad", "tcc.relu %"]:
        if op in train_step:
            sys.exit(f"@train_step still has {op}:\n{train_step}")

    fused, fused_params = tcc_train(args.tcc, d, onnx_path, "fused", ["--gemm-epilogue"])
    plain, _ = tcc_train(args.tcc, d, onnx_path, "plain", ["--gemm-epilogue=false"])

    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    crit = nn.MSELoss()
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
    np.testing.assert_allclose(fused, torch_losses, rtol=1e-4, atol=1e-6,
                               err_msg="--gemm-epilogue: per-step losses differ from PyTorch")
    for k, v in model.state_dict().items():
        np.testing.assert_allclose(fused_params[k], v.detach().numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=f"--gemm-epilogue: parameter {k} differs")
    # f32: the fused kernels add the bias to the same accumulator (K is below
    # OpenBLAS's K blocking here, so the bias joins one sum), apply the
    # library's activation formulas and sum bias gradients in reduce_sum's
    # order. The runs were bit-identical until the learning rate became an
    # f32 operand (issue 34); since then a few weights differ in the last
    # bit after the first step (not understood yet, noted on the issue), so
    # the losses are compared to within a few ulps.
    np.testing.assert_allclose(fused, plain, rtol=1e-6, atol=0,
                               err_msg="fp32 losses with and without the pass")
    print(f"fp32: {STEPS} steps match PyTorch (final loss {fused[-1]:.6f}) and the "
          "unfused run to 1e-6")

    # 16-bit: the fused op rounds once where the unfused ops round per op.
    # (--no-fuse: the library kernels; it spares the host compiler's time.)
    for prec, tol in [("bf16", 3e-2), ("fp16", 5e-3)]:
        f, _ = tcc_train(args.tcc, d, onnx_path, f"fused_{prec}",
                         ["--gemm-epilogue", "--precision", prec, "--no-fuse"])
        p, _ = tcc_train(args.tcc, d, onnx_path, f"plain_{prec}",
                         ["--gemm-epilogue=false", "--precision", prec, "--no-fuse"])
        np.testing.assert_allclose(f, p, rtol=tol,
                                   err_msg=f"{prec}: losses with and without the pass")
        np.testing.assert_allclose(f, torch_losses, rtol=tol,
                                   err_msg=f"{prec} with the pass vs PyTorch fp32")
        worst = max(abs(a - b) / abs(b) for a, b in zip(f, p))
        print(f"{prec}: with and without the pass within {worst:.1e} (rtol {tol})")


if __name__ == "__main__":
    main()

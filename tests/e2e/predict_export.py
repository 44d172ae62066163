#!/usr/bin/python3
"""`tcc predict` and `tcc export` against the model computed in NumPy.

1. The example MLP (batch 8) trains 6 steps on the bundled digits and writes
   a checkpoint and `--export`s the trained model. `tcc export` from the
   checkpoint must write the very same bytes (one code path).
2. `tcc predict` with the checkpoint on 13 samples (not a multiple of the
   batch: the last batch is padded) must equal the MLP computed in NumPy
   from the exported initializers within 1e-5; `tcc-run predict` must write
   the same file, and the checkpoint file must give what its directory does.
3. Without a checkpoint the prediction is the initial weights' forward (the
   initializers of examples/mlp.onnx).
4. A model of three outputs (FLOAT, DOUBLE, INT64), predicted on 7 samples
   in batches of 4: one file per output (OUT_NAME.npy), each in the declared
   type (the DOUBLE one computed in float32 and written as float64).
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

N = 13  # samples predicted: one full batch of 8 and 5 padded


def fail(msg):
    sys.exit("FAIL: " + msg)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"exit {p.returncode}: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def initializers(path):
    m = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}


def mlp(w, x):
    """64 -> 128 -> 128 -> 10 with ReLU (examples/make_mlp.py), in f64."""
    h = x.astype(np.float64)
    for i, layer in enumerate(("0", "2", "4")):
        h = h @ w[layer + ".weight"].astype(np.float64).T + w[layer + ".bias"]
        if i < 2:
            h = np.maximum(h, 0)
    return h


def close(name, got, want, tol=1e-5):
    if got.shape != want.shape:
        fail(f"{name}: shape {got.shape}, expected {want.shape}")
    err = np.abs(got.astype(np.float64) - want).max()
    if not err <= tol:
        fail(f"{name}: max difference {err:.3g} from NumPy (tolerance {tol})")
    print(f"{name}: {got.shape} within {err:.2g} of NumPy")


def three_outputs(path):
    rng = np.random.RandomState(1)
    w = rng.randn(3, 4).astype(np.float32)
    b = rng.randn(3).astype(np.float32)
    nodes = [
        helper.make_node("Gemm", ["x", "w", "b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["p"], axis=1),
        helper.make_node("Cast", ["p"], ["probs"], to=TensorProto.DOUBLE),
        helper.make_node("ArgMax", ["logits"], ["class"], axis=1, keepdims=0),
    ]
    g = helper.make_graph(
        nodes, "three",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3]),
         helper.make_tensor_value_info("probs", TensorProto.DOUBLE, ["N", 3]),
         helper.make_tensor_value_info("class", TensorProto.INT64, ["N"])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              path)
    return w, b


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--tcc-run", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    j = lambda *p: os.path.join(work, *p)
    digits = os.path.join(args.examples, "digits")
    mlp_onnx = os.path.join(args.examples, "mlp.onnx")
    x = np.load(os.path.join(digits, "test_x.npy"))[:N]
    np.save(j("x.npy"), x)

    # 1. Train with a checkpoint and --export; tcc export must agree.
    run([args.tcc, "compile", mlp_onnx, "--batch", "8", "-o", j("mlp.tcc")])
    run([args.tcc, "train", j("mlp.tcc"),
         "--data", "x=" + os.path.join(digits, "train_x.npy"),
         "--data", "labels=" + os.path.join(digits, "train_y.npy"),
         "--steps", "6", "--no-progress", "--checkpoint-dir", j("ck"),
         "--export", j("train_export.onnx")])
    run([args.tcc, "export", j("mlp.tcc"), "--checkpoint", j("ck"),
         "-o", j("export.onnx")])
    if open(j("export.onnx"), "rb").read() != open(j("train_export.onnx"), "rb").read():
        fail("tcc export of the checkpoint differs from tcc train --export")
    print("tcc export: the same bytes as tcc train --export")
    trained = initializers(j("export.onnx"))
    initial = initializers(mlp_onnx)
    if all(np.array_equal(trained[k], initial[k]) for k in initial):
        fail("training changed no parameter: the comparison would prove nothing")

    # 2. The checkpoint's predictions, 13 samples in batches of 8.
    out = run([args.tcc, "predict", j("mlp.tcc"), "--checkpoint", j("ck"),
               "--data", "x=" + j("x.npy"), "--out", j("pred.npy")])
    if "2 batch(es) of 8" not in out or "3 padding rows dropped" not in out:
        fail("unexpected summary: " + out)
    pred = np.load(j("pred.npy"))
    if pred.dtype != np.float32:
        fail(f"predictions are {pred.dtype}, the model's output is float32")
    close("trained predictions", pred, mlp(trained, x))
    run([args.tcc_run, "predict", j("mlp.tcc"), "--checkpoint",
         j("ck", "ckpt-00000006.tcckpt"), "--data", "x=" + j("x.npy"),
         "--out", j("pred_run.npy"), "--threads", "1"])
    if open(j("pred_run.npy"), "rb").read() != open(j("pred.npy"), "rb").read():
        fail("tcc-run predict (from the checkpoint file) differs from tcc predict")
    print("tcc-run predict: the same file")
    if os.path.exists(j("pred.npy.tmp")):
        fail("a temporary file was left behind")

    # 3. No checkpoint: the initial weights.
    run([args.tcc, "predict", j("mlp.tcc"), "--data", "x=" + j("x.npy"),
         "--out", j("pred0.npy")])
    close("initial predictions", np.load(j("pred0.npy")), mlp(initial, x))

    # 4. Several outputs, declared DOUBLE and INT32.
    w, b = three_outputs(j("three.onnx"))
    run([args.tcc, "compile", j("three.onnx"), "--batch", "4", "-o", j("three.tcc")])
    x3 = np.random.RandomState(2).randn(7, 4).astype(np.float32)
    np.save(j("x3.npy"), x3)
    out = run([args.tcc, "predict", j("three.tcc"), "--data", "x=" + j("x3.npy"),
               "--out", j("three.npy")])
    logits = x3.astype(np.float64) @ w.T.astype(np.float64) + b
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    want = {"logits": (np.float32, logits),
            "probs": (np.float64, e / e.sum(axis=1, keepdims=True)),
            "class": (np.int64, logits.argmax(axis=1))}
    for name, (dtype, ref) in want.items():
        got = np.load(j(f"three_{name}.npy"))
        if got.dtype != dtype:
            fail(f"output {name} is {got.dtype}, declared {np.dtype(dtype)}")
        if dtype == np.int64:
            if not np.array_equal(got, ref):
                fail(f"output {name}: {got}, expected {ref}")
            print(f"{name}: {got.shape} {got.dtype}, equal")
        else:
            close(name, got, ref)
    print("PASS")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""--precision bf16/fp16 against fp32, end to end.

1. The GPT-style character model (examples/make_gpt.py, batch 4) is compiled
   with --precision fp32, bf16 and fp16 and trained on the bundled text with
   AdamW, in the same order (--no-shuffle). The loss curves must agree: the
   mean loss of the last steps within 2% of fp32's (bf16 and fp16 keep 8 and
   11 significant bits in the GEMMs and activations, f32 accumulation and
   master weights), and every run must learn (the loss falls). fp16 may skip
   its first steps while the loss scale comes down from 65536.
2. fp16 dynamic loss scaling, with an injected overflow: the digits MLP on
   inputs scaled so that the scaled gradients overflow f16 at step 1. That
   step is skipped: `"skipped": true`, the loss scale halves to 32768, and
   the exported weights are bit for bit the initial ones (AdamW's moments
   and step are untouched too, or the next steps would differ from a run
   that starts at the halved scale). Later steps train once the scale fits,
   and the f16 weight copies that AdamW writes (kept on a skipped step, like
   the weights) give the same run as --shadow-weights=false.
3. The bf16 weight copies that AdamW writes (tcc-shadow-weights, on by
   default) hold exactly the casts the step would make: the GPT trained with
   --shadow-weights=false gives bit for bit the same losses and exported
   weights. The copies are state, so a run stopped at step 10 and resumed
   from its checkpoint also ends bit for bit where the straight run does.
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

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def metrics(path):
    return [json.loads(line) for line in open(path)]


def gpt_curves(tcc, corpus, work, steps):
    onnx_path = os.path.join(work, "gpt.onnx")
    run(["/usr/bin/python3", os.path.join(EXAMPLES, "make_gpt.py"), "-o",
         onnx_path])
    curves = {}
    for prec in ("fp32", "bf16", "fp16"):
        art = os.path.join(work, f"gpt-{prec}.tcc")
        run([tcc, "compile", onnx_path, "-o", art, "--batch", "4", "--freeze",
             "mask", "--lr", "0.003", "--precision", prec])
        m = os.path.join(work, f"gpt-{prec}.jsonl")
        out = run([tcc, "train", art, "--tokens", corpus, "--steps",
                   str(steps), "--no-shuffle", "--no-progress", "--metrics",
                   m])
        curves[prec] = metrics(m)
        print(prec, next(l for l in out.splitlines() if l.startswith("trained")))
    return curves


def check_gpt(curves, steps):
    def tail_mean(c):
        return float(np.mean([r["loss"] for r in c[-5:]]))

    ref = tail_mean(curves["fp32"])
    first = curves["fp32"][0]["loss"]
    print(f"fp32: first loss {first:.4f}, last-5 mean {ref:.4f}")
    assert ref < 0.8 * first, f"fp32 did not learn: {first} -> {ref}"
    for prec in ("bf16", "fp16"):
        c = curves[prec]
        assert len(c) == steps, f"{prec}: {len(c)} steps"
        got = tail_mean(c)
        rel = abs(got - ref) / ref
        print(f"{prec}: last-5 mean {got:.4f} ({100 * rel:.2f}% from fp32)")
        assert rel < 0.02, f"{prec} loss {got} is {100 * rel:.1f}% from fp32's {ref}"
        # Step 1 runs on the same weights: only rounding differs.
        assert abs(c[0]["loss"] - first) < 0.02 * first, (prec, c[0], first)
        if prec == "fp16":
            skipped = sum(r["skipped"] for r in c)
            print(f"fp16: {skipped} steps skipped, loss scale {c[-1]['loss_scale']}")
            assert skipped < steps // 2, f"fp16 skipped {skipped} of {steps}"
        else:
            assert "skipped" not in c[0], "bf16 has no loss scaling"


def check_overflow(tcc, work):
    x = np.load(os.path.join(EXAMPLES, "digits", "train_x.npy"))
    big = os.path.join(work, "big_x.npy")
    np.save(big, (x * 1000).astype(np.float32))
    labels = os.path.join(EXAMPLES, "digits", "train_y.npy")
    model = os.path.join(EXAMPLES, "mlp.onnx")
    art = os.path.join(work, "mlp-fp16.tcc")
    run([tcc, "compile", model, "-o", art, "--batch", "8", "--precision",
         "fp16"])
    initial = {t.name: onnx.numpy_helper.to_array(t)
               for t in onnx.load(model).graph.initializer}

    def train(steps, tag, art=art):
        m = os.path.join(work, f"{tag}.jsonl")
        out = os.path.join(work, f"{tag}.onnx")
        log = run([tcc, "train", art, "--data", "x=" + big, "--data",
                   "labels=" + labels, "--steps", str(steps), "--no-shuffle",
                   "--no-progress", "--metrics", m, "--export", out])
        params = {t.name: onnx.numpy_helper.to_array(t)
                  for t in onnx.load(out).graph.initializer}
        return metrics(m), params, log

    rows, params, log = train(1, "one")
    assert rows[0]["skipped"] is True, rows
    assert rows[0]["loss_scale"] == 32768.0, rows
    assert np.isfinite(rows[0]["loss"]), rows
    assert "fp16 loss scaling: 1 of 1 steps skipped" in log, log
    for name, v in initial.items():
        assert np.array_equal(params[name], v), f"{name} changed on a skipped step"
    print("overflow at step 1: skipped, scale 65536 -> 32768, weights untouched")

    rows, params, log = train(40, "forty")
    skipped = [r["step"] for r in rows if r["skipped"]]
    trained = [r for r in rows if not r["skipped"]]
    print(f"40 steps: skipped {skipped}, final scale {rows[-1]['loss_scale']}")
    assert skipped[0] == 1 and len(trained) >= 20, skipped
    # Each skip halves the scale, and nothing doubles within 2000 steps.
    assert rows[-1]["loss_scale"] == 65536.0 / 2 ** len(skipped), rows[-1]
    changed = [n for n, v in initial.items() if not np.array_equal(params[n], v)]
    assert changed, "no weight changed in 40 steps"
    assert trained[-1]["loss"] < rows[0]["loss"], (rows[0], trained[-1])

    # The f16 weight copies AdamW writes (on by default) are kept on the
    # skipped steps with the weights: the run equals one that casts.
    casts = os.path.join(work, "mlp-fp16-casts.tcc")
    run([tcc, "compile", model, "-o", casts, "--batch", "8", "--precision",
         "fp16", "--shadow-weights=false"])
    rows2, params2, _ = train(40, "forty-casts", casts)
    assert [r["loss"] for r in rows2] == [r["loss"] for r in rows], (rows, rows2)
    assert all(np.array_equal(params2[n], v) for n, v in params.items())
    print("f16 weight copies: the 40 steps and the weights equal the casts'")


def check_shadow(tcc, corpus, work, steps, shadowed):
    onnx_path = os.path.join(work, "gpt.onnx")
    runs = {}
    for flag in ("true", "false"):
        art = os.path.join(work, f"gpt-bf16-shadow-{flag}.tcc")
        report = run([tcc, "compile", onnx_path, "-o", art, "--batch", "4",
                      "--freeze", "mask", "--lr", "0.003", "--precision",
                      "bf16", f"--shadow-weights={flag}", "--report"])
        assert ("16-bit weight copies" in report) == (flag == "true"), report
        m = os.path.join(work, f"shadow-{flag}.jsonl")
        out = os.path.join(work, f"shadow-{flag}.onnx")
        run([tcc, "train", art, "--tokens", corpus, "--steps", str(steps),
             "--no-shuffle", "--no-progress", "--metrics", m, "--export", out])
        runs[flag] = ([r["loss"] for r in metrics(m)],
                      {t.name: onnx.numpy_helper.to_array(t)
                       for t in onnx.load(out).graph.initializer}, art)
    on, off = runs["true"], runs["false"]
    assert on[0] == [r["loss"] for r in shadowed], "the default is not shadowed"
    assert on[0] == off[0], f"losses differ:\n{on[0]}\n{off[0]}"
    for name, v in off[1].items():
        assert np.array_equal(on[1][name], v), f"{name} differs"
    print(f"bf16 weight copies: {steps} losses and {len(off[1])} exported "
          "tensors bit-identical to the per-step casts")

    # Stopped at step 10 and resumed: the copies come back from the checkpoint
    # (the later checkpoints are deleted, so resume takes ckpt-10).
    ckpt = os.path.join(work, "shadow-ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    base = [tcc, "train", on[2], "--tokens", corpus, "--no-shuffle",
            "--no-progress", "--steps", str(steps), "--checkpoint-dir", ckpt]
    run(base + ["--checkpoint-every", "10", "--keep-checkpoints", "10"])
    for f in os.listdir(ckpt):
        if f != "ckpt-00000010.tcckpt":
            os.remove(os.path.join(ckpt, f))
    out = os.path.join(work, "shadow-resumed.onnx")
    log = run(base + ["--resume", ckpt, "--export", out])
    assert "resumed at step 10" in log, log
    for t in onnx.load(out).graph.initializer:
        v = onnx.numpy_helper.to_array(t)
        assert np.array_equal(on[1][t.name], v), f"resumed: {t.name} differs"
    print("resumed at step 10: exported weights bit-identical")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    check_overflow(args.tcc, args.work)
    curves = gpt_curves(args.tcc, args.corpus, args.work, args.steps)
    check_gpt(curves, args.steps)
    check_shadow(args.tcc, args.corpus, args.work, args.steps, curves["bf16"])
    print("ok")


if __name__ == "__main__":
    main()

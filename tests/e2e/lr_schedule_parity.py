#!/usr/bin/python3
"""Learning-rate schedules against PyTorch's LambdaLR, and resuming them.

A torch.nn MLP is exported, compiled once per optimizer, and trained for 30
steps by tcc with `tcc train --lr/--lr-schedule/--warmup-steps/...` (no
recompilation: the rate is a runtime value) and by PyTorch with the same
optimizer under torch.optim.lr_scheduler.LambdaLR over the README's formula.
Per-step losses, the per-step `lr` of --metrics and the final parameters
must agree. Then a run is resumed from its step-15 checkpoint and must end
bit-identical to the uninterrupted run, and a resume under another schedule
and bad schedule flags must fail with clear errors.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

BATCH, SAMPLES, STEPS = 8, 48, 30


def lr_at(kind, lr, w, d, m, t):
    """The README's formula, written independently of tcc's code."""
    if t < w:
        return lr * (t + 1) / w
    if kind == "constant":
        return lr
    p = min(max((t - w) / max(1, d - w), 0.0), 1.0)
    if kind == "cosine":
        return m + (lr - m) * 0.5 * (1 + math.cos(math.pi * p))
    return lr - (lr - m) * p


def run(cmd, expect_fail=False):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if expect_fail:
        if p.returncode == 0:
            sys.exit(f"expected a failure: {' '.join(cmd)}\n{p.stdout}")
        return p.stderr
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n"
                 f"{p.stdout}\n{p.stderr}")
    return p.stdout


class Case:
    def __init__(self, tcc, work, optimizer, compiled_lr, momentum=0.0):
        self.tcc, self.optimizer, self.momentum = tcc, optimizer, momentum
        self.d = os.path.join(work, optimizer)
        # Checkpoint directories must start empty: a rerun starts afresh.
        shutil.rmtree(self.d, ignore_errors=True)
        os.makedirs(self.d)
        torch.manual_seed(0)
        self.model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(),
                                   nn.Linear(16, 4))
        self.init = {k: v.clone() for k, v in self.model.state_dict().items()}
        onnx_path = os.path.join(self.d, "model.onnx")
        torch.onnx.export(self.model, torch.randn(2, 12), onnx_path,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
                          opset_version=17)
        rng = np.random.RandomState(1)
        self.x = rng.randn(SAMPLES, 12).astype(np.float32)
        self.y = rng.randint(0, 4, size=SAMPLES).astype(np.int64)
        self.xf = os.path.join(self.d, "x.npy")
        self.yf = os.path.join(self.d, "y.npy")
        np.save(self.xf, self.x)
        np.save(self.yf, self.y)
        self.art = os.path.join(self.d, "model.tcc")
        cmd = [tcc, "compile", onnx_path, "-o", self.art, "--batch",
               str(BATCH), "--optimizer", optimizer, "--lr", str(compiled_lr)]
        if momentum:
            cmd += ["--momentum", str(momentum)]
        run(cmd)

    def train_cmd(self, tag, flags, extra=()):
        metrics = os.path.join(self.d, tag + ".jsonl")
        out = os.path.join(self.d, tag + ".onnx")
        cmd = [self.tcc, "train", self.art, "--data", "x=" + self.xf,
               "--data", "labels=" + self.yf, "--steps", str(STEPS),
               "--no-shuffle", "--no-progress", "--metrics", metrics,
               "--export", out] + flags + list(extra)
        return cmd, metrics, out

    def tcc_run(self, tag, flags, extra=()):
        cmd, metrics, out = self.train_cmd(tag, flags, extra)
        run(cmd)
        lines = [json.loads(l) for l in open(metrics)]
        params = {t.name: onnx.numpy_helper.to_array(t)
                  for t in onnx.load(out).graph.initializer}
        return lines, params

    def torch_run(self, sched):
        self.model.load_state_dict(self.init)
        base = sched["lr"]
        if self.optimizer == "adamw":
            opt = torch.optim.AdamW(self.model.parameters(), lr=base)
        else:
            opt = torch.optim.SGD(self.model.parameters(), lr=base,
                                  momentum=self.momentum)
        lam = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda t: lr_at(sched["kind"], base, sched["w"], sched["d"],
                                 sched["m"], t) / base)
        crit = nn.CrossEntropyLoss()
        losses, lrs = [], []
        per_epoch = SAMPLES // BATCH
        for step in range(STEPS):
            b = step % per_epoch
            xb = torch.from_numpy(self.x[b * BATCH:(b + 1) * BATCH])
            yb = torch.from_numpy(self.y[b * BATCH:(b + 1) * BATCH])
            lrs.append(opt.param_groups[0]["lr"])
            opt.zero_grad()
            l = crit(self.model(xb), yb)
            l.backward()
            opt.step()
            lam.step()
            losses.append(l.item())
        return losses, lrs, {k: v.detach().numpy()
                             for k, v in self.model.state_dict().items()}

    def check(self, tag, sched, flags):
        lines, params = self.tcc_run(tag, flags)
        t_losses, t_lrs, t_params = self.torch_run(sched)
        lrs = [l["lr"] for l in lines]
        # The rate travels as an f32 tensor: equal to f32 rounding.
        np.testing.assert_allclose(lrs, t_lrs, rtol=1e-7,
                                   err_msg=f"{tag}: per-step lr differs")
        np.testing.assert_allclose([l["loss"] for l in lines], t_losses,
                                   rtol=1e-4, atol=1e-6,
                                   err_msg=f"{tag}: per-step losses differ")
        for k, v in t_params.items():
            np.testing.assert_allclose(params[k], v, rtol=1e-4, atol=1e-6,
                                       err_msg=f"{tag}: parameter {k} differs")
        print(f"{tag}: {STEPS} steps match LambdaLR (lr {lrs[0]:.3g} -> "
              f"{max(lrs):.3g} -> {lrs[-1]:.3g}, final loss "
              f"{lines[-1]['loss']:.5f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)

    adamw = Case(args.tcc, args.work, "adamw", 1e-3)
    cosine = ["--lr", "0.02", "--lr-schedule", "cosine", "--warmup-steps", "5",
              "--min-lr", "0.002"]
    adamw.check("adamw_cosine",
                dict(kind="cosine", lr=0.02, w=5, d=STEPS, m=0.002), cosine)
    # Without flags the rate is the compiled one: the artifact did not change.
    adamw.check("adamw_compiled",
                dict(kind="constant", lr=1e-3, w=0, d=0, m=0.0), [])
    sgd = Case(args.tcc, args.work, "sgd", 0.05, momentum=0.9)
    sgd.check("sgd_linear_clamped",
              dict(kind="linear", lr=0.1, w=3, d=20, m=0.01),
              ["--lr", "0.1", "--lr-schedule", "linear", "--warmup-steps", "3",
               "--decay-steps", "20", "--min-lr", "0.01"])
    sgd.check("sgd_constant_warmup",
              dict(kind="constant", lr=0.08, w=4, d=0, m=0.0),
              ["--lr", "0.08", "--warmup-steps", "4"])

    # Resume: the step-15 checkpoint of a run, continued, ends where the
    # uninterrupted run does, bit for bit (CPU, same threads).
    full_ck = os.path.join(adamw.d, "ck_full")
    _, full = adamw.tcc_run("full", cosine, ["--checkpoint-dir", full_ck,
                                             "--checkpoint-every", "15",
                                             "--keep-checkpoints", "5"])
    ck15 = os.path.join(full_ck, "ckpt-00000015.tcckpt")
    lines, resumed = adamw.tcc_run("resumed", cosine, [
        "--resume", ck15, "--checkpoint-dir", os.path.join(adamw.d, "ck_res")])
    full_lines = [json.loads(l) for l in open(os.path.join(adamw.d,
                                                           "full.jsonl"))]
    assert [l["lr"] for l in lines] == [l["lr"] for l in full_lines[15:]], \
        "the resumed run's rates differ from the uninterrupted run's"
    for k, v in full.items():
        if not np.array_equal(resumed[k], v):
            sys.exit(f"resume: parameter {k} differs from the uninterrupted run")
    print("resume at step 15: the schedule continues, parameters bit-identical")

    # A resume under another schedule is refused, naming both.
    cmd, _, _ = adamw.train_cmd("bad_resume", cosine[:-1] + ["0.001"], [
        "--resume", ck15, "--checkpoint-dir", os.path.join(adamw.d, "ck_bad")])
    err = run(cmd, expect_fail=True)
    want = ("its run's learning rate followed 'cosine lr=0.02 warmup=5 "
            "decay=30 min_lr=0.002', this run's 'cosine lr=0.02 warmup=5 "
            "decay=30 min_lr=0.001'")
    assert want in err, err
    # Bad flags: each names what is wrong.
    for flags, want in (
            (["--lr-schedule", "step"],
             "--lr-schedule must be constant, linear or cosine, got 'step'"),
            (["--lr-schedule", "cosine", "--warmup-steps", "10",
              "--decay-steps", "5"],
             "--decay-steps 5 is below --warmup-steps 10"),
            (["--lr", "-1"], "--lr must be positive and finite, got -1"),
            (["--lr", "fast"], "--lr must be a finite number, got 'fast'"),
            (["--min-lr", "0.1"], "--min-lr needs --lr-schedule linear or "
                                  "cosine"),
            (["--lr-schedule", "linear", "--min-lr", "1"],
             "--min-lr 1 is above the learning rate 0.001"),
            (["--lr-schedule", "linear", "--decay-steps", "x"],
             "--decay-steps must be a non-negative whole number, got 'x'")):
        cmd, _, _ = adamw.train_cmd("bad", flags)
        err = run(cmd, expect_fail=True)
        assert want in err, f"{flags}: expected '{want}' in:\n{err}"
    print("bad schedule flags and a mismatched resume fail with clear errors")


if __name__ == "__main__":
    main()

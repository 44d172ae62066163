#!/usr/bin/python3
"""--offload-optimizer trains to the bits of the same step without it.

With --offload-optimizer the update is its own program, optimizer_step, which
`tcc train` runs on a CPU session of its own (the optimizer state lives
there) after the device session's train_step, copying the gradients over and
the new parameters back (runtime/train/OffloadSession.h). On the CPU target
both sessions are CPU sessions, so everything but the CUDA copies runs here.
The kernels are the same, in the same order, so the runs must agree bit for
bit: per-step losses (and grad_norm), every tensor of every checkpoint, the
exported model. Cases:
  * the example MLP on the digits: SGD with momentum; AdamW; AdamW with
    --clip-grad-norm and --grad-accum 2; AdamW in bf16 (the 16-bit weight
    copies the update writes go back to the device too) and in fp16 (the
    overflow flag crosses with the gradients; the skip is in the update);
  * AdamW, killed after step 7 and resumed from its step-5 checkpoint, equals
    the uninterrupted run without offload;
  * the GPT example (dropout 0.1: the random counter stays on the device)
    with AdamW over the bundled text;
  * tcc compile --report: the device memory saved is the optimizer state the
    checkpoint holds (AdamW's moments, step and rate), and the GPT's device
    tensors take less memory;
  * --offload-optimizer with --zero-shards is refused.
"""
import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    sys.exit("FAIL: " + msg)


def run(cmd, expect_rc=0, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != expect_rc:
        fail(f"exit {p.returncode} (expected {expect_rc}): {' '.join(cmd)}\n"
             f"{p.stdout}\n{p.stderr}")
    return p


def checkpoint(path):
    """Every tensor of a checkpoint file, by name, as bytes."""
    with open(path, "rb") as f:
        blob = f.read()
    (length,) = struct.unpack("<Q", blob[16:24])
    man = json.loads(blob[64:64 + length])
    start = (64 + length + 63) // 64 * 64
    return {t["name"]: blob[start + t["offset"]:start + t["offset"] + t["size"]]
            for t in man["tensors"]}


class Runs:
    def __init__(self, args):
        self.tcc, self.work, self.ex = args.tcc, args.work, args.examples

    def compile(self, tag, model, opts, offload, report=False):
        art = os.path.join(self.work, tag + ".tcc")
        cmd = [self.tcc, "compile", model, "-o", art] + opts
        if offload:
            cmd.append("--offload-optimizer")
        if report:
            cmd.append("--report")
        return art, run(cmd)

    def train(self, tag, art, data, steps, extra=(), expect_rc=0, env=None,
              fresh=True):
        ck = os.path.join(self.work, tag + ".ck")
        if fresh:
            shutil.rmtree(ck, ignore_errors=True)
        metrics = os.path.join(self.work, tag + ".jsonl")
        out = os.path.join(self.work, tag + ".onnx")
        p = run([self.tcc, "train", art, "--steps", str(steps), "--seed", "3",
                 "--no-progress", "--metrics", metrics, "--checkpoint-dir", ck,
                 "--checkpoint-every", "5", "--export", out] + data +
                list(extra), expect_rc=expect_rc, env=env)
        return p, ck, metrics, out


def metric_lines(path):
    """The metrics without timings: loss, grad_norm, lr... per step."""
    rows = []
    for line in open(path):
        m = json.loads(line)
        rows.append({k: v for k, v in m.items()
                     if "ms" not in k and "second" not in k and
                     "per_s" not in k and "samples_s" not in k})
    return rows


def same_run(what, ref, off):
    """ref, off: (metrics path, checkpoint dir, export path)."""
    lr, lo = metric_lines(ref[0]), metric_lines(off[0])
    if lr != lo:
        fail(f"{what}: the metrics differ:\n{lr}\n{lo}")
    files = sorted(f for f in os.listdir(ref[1]) if f.endswith(".tcckpt"))
    if not files or files != sorted(
            f for f in os.listdir(off[1]) if f.endswith(".tcckpt")):
        fail(f"{what}: checkpoints {files} vs {os.listdir(off[1])}")
    for f in files:
        a = checkpoint(os.path.join(ref[1], f))
        b = checkpoint(os.path.join(off[1], f))
        if sorted(a) != sorted(b):
            fail(f"{what}: {f} holds {sorted(a)} vs {sorted(b)}")
        for k in a:
            if a[k] != b[k]:
                fail(f"{what}: {f}: tensor {k} differs")
    if ref[2]:
        pa = {t.name: onnx.numpy_helper.to_array(t)
              for t in onnx.load(ref[2]).graph.initializer}
        pb = {t.name: onnx.numpy_helper.to_array(t)
              for t in onnx.load(off[2]).graph.initializer}
        for k in pa:
            if not np.array_equal(pa[k], pb[k]):
                fail(f"{what}: exported {k} differs")
    return len(lr), len(files)


def pair(r, tag, model, opts, data, steps):
    res = []
    for offload in (False, True):
        t = tag + ("_off" if offload else "_ref")
        art, _ = r.compile(t, model, opts, offload)
        p, ck, m, out = r.train(t, art, data, steps)
        if offload and "optimizer offload: optimizer state" not in p.stdout:
            fail(f"{tag}: no offload summary:\n{p.stdout}")
        res.append(((m, ck, out), p))
    n, files = same_run(tag, res[0][0], res[1][0])
    print(f"{tag}: {n} steps and {files} checkpoints bit-identical with and "
          f"without --offload-optimizer")
    return res


def peak(stdout):
    m = re.search(r"tensor memory peak ([0-9.]+) (B|KiB|MiB|GiB)", stdout)
    scale = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    return float(m.group(1)) * scale[m.group(2)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    r = Runs(args)
    mlp = os.path.join(args.examples, "mlp.onnx")
    digits = ["--data", "x=" + os.path.join(args.examples, "digits", "train_x.npy"),
              "--data", "labels=" + os.path.join(args.examples, "digits",
                                                 "train_y.npy")]
    adamw = ["--optimizer", "adamw", "--lr", "0.003"]
    pair(r, "mlp_sgd", mlp, ["--batch", "32", "--optimizer", "sgd", "--lr",
                             "0.1", "--momentum", "0.9"], digits, 10)
    res = pair(r, "mlp_adamw", mlp, ["--batch", "32"] + adamw, digits, 10)
    pair(r, "mlp_clip_accum", mlp, ["--batch", "16", "--grad-accum", "2",
                                    "--clip-grad-norm", "0.5"] + adamw,
         digits, 10)
    pair(r, "mlp_bf16", mlp, ["--batch", "32", "--precision", "bf16"] + adamw,
         digits, 10)
    pair(r, "mlp_fp16", mlp, ["--batch", "32", "--precision", "fp16"] + adamw,
         digits, 10)

    # Killed after step 7, resumed from step 5: the reference's bits.
    art, rep = r.compile("mlp_resume", mlp, ["--batch", "32"] + adamw, True,
                         report=True)
    env = dict(os.environ, TCC_TEST_KILL_AFTER_STEP="7")
    r.train("mlp_resume", art, digits, 10, expect_rc=-signal.SIGKILL, env=env)
    ck = os.path.join(args.work, "mlp_resume.ck")
    p, _, m, out = r.train("mlp_resume", art, digits, 10,
                           extra=["--resume", ck], fresh=False)
    if "resumed at step 5" not in p.stdout:
        fail("the offloaded run should resume at step 5:\n" + p.stdout)
    same_run("mlp_resume", res[0][0], (m, ck, out))
    print("mlp_resume: killed after step 7, resumed at 5: the bits of the "
          "run without offload")

    # The report's saving is the optimizer state the checkpoint holds.
    saved = re.search(r"device memory saved .*\((\d+) bytes\)", rep.stdout)
    if not saved:
        fail("no 'device memory saved' in the report:\n" + rep.stdout)
    ckpt = checkpoint(os.path.join(res[1][0][1], "ckpt-00000010.tcckpt"))
    state = sum(len(v) for k, v in ckpt.items()
                if k.endswith((".exp_avg", ".exp_avg_sq")) or
                k in ("adamw.step", "optimizer.lr"))
    if int(saved.group(1)) != state:
        fail(f"report says {saved.group(1)} bytes saved, the optimizer state "
             f"is {state}")
    print(f"report: device memory saved {state} bytes = AdamW's state")

    # The GPT example with dropout, AdamW, over the bundled text.
    gpt = os.path.join(args.work, "gpt.onnx")
    run([sys.executable, os.path.join(args.examples, "make_gpt.py"), "-o",
         gpt, "--dropout", "0.1"])
    tokens = ["--tokens", os.path.join(args.examples, "text", "licenses.txt")]
    g = pair(r, "gpt_adamw", gpt, ["--batch", "4", "--freeze", "mask",
                                   "--optimizer", "adamw", "--lr", "0.001"],
             tokens, 6)
    ref_peak, off_peak = peak(g[0][1].stdout), peak(g[1][1].stdout)
    if not off_peak < ref_peak:
        fail(f"gpt: the device's tensors take {off_peak} bytes with offload, "
             f"{ref_peak} without")
    print(f"gpt_adamw: device tensor memory peak {ref_peak / 2**20:.1f} MiB "
          f"-> {off_peak / 2**20:.1f} MiB with offload")

    p = run([args.tcc, "compile", mlp, "-o", os.path.join(args.work, "z.tcc"),
             "--batch", "32", "--data-parallel", "--zero-shards", "2",
             "--offload-optimizer"], expect_rc=1)
    if "--offload-optimizer does not combine with --zero-shards" not in p.stderr:
        fail("--zero-shards with --offload-optimizer: " + p.stderr)
    print("--offload-optimizer with --zero-shards: refused")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Checkpoints of a sharded run (--zero-shards 2) hold the whole state.

The example MLP (AdamW) is compiled for two data-parallel ranks with the
whole optimizer state on every rank (--data-parallel) and sharded over the
two (--zero-shards 2), and each is trained for 12 steps under
`mpirun -np 2` with a checkpoint every 5 steps:

  * the sharded run's checkpoints of steps 5, 10 and 12 hold the same
    tensors (names, dtypes, shapes, bytes) as the unsharded run's: the
    moments are written whole, with their parameter's shape;
  * the sharded run killed after its checkpoint of step 10 (rank 0 SIGKILLs
    itself) and resumed with two ranks ends with the losses of the
    uninterrupted run and the same last checkpoint, bit for bit;
  * resuming it as one process is refused, and `tcc export --checkpoint`
    with the sharded artifact writes the model the unsharded run exports.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import onnx
import onnx.numpy_helper

STEPS = 12


def fail(msg):
    sys.exit("FAIL: " + msg)


def run(cmd, expect_ok=True):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if expect_ok and p.returncode != 0:
        fail(f"command failed ({p.returncode}): {' '.join(cmd)}\n"
             f"{p.stdout}\n{p.stderr}")
    return p


def read_checkpoint(path):
    """{name: (dtype, shape, kind, bytes)} and the manifest of a .tcckpt
    (layout in runtime/train/Checkpoint.h)."""
    b = open(path, "rb").read()
    if b[:8] != b"TCCCKPT\0":
        fail(f"{path}: not a checkpoint")
    m = int.from_bytes(b[16:24], "little")
    manifest = json.loads(b[64:64 + m])
    data = (64 + m + 63) // 64 * 64
    tensors = {}
    for t in manifest["tensors"]:
        at = data + t["offset"]
        tensors[t["name"]] = (t["dtype"], t["shape"], t["kind"],
                              b[at:at + t["size"]])
    return manifest, tensors


class Case:
    def __init__(self, args):
        self.a = args
        ex = args.examples
        self.data = ["--data", "x=" + os.path.join(ex, "digits", "train_x.npy"),
                     "--data", "labels=" + os.path.join(ex, "digits",
                                                        "train_y.npy")]

    def compile(self, tag, extra):
        art = os.path.join(self.a.work, tag + ".tcc")
        run([self.a.tcc, "compile", os.path.join(self.a.examples, "mlp.onnx"),
             "-o", art, "--batch", "8", "--data-parallel", "--optimizer",
             "adamw", "--lr", "0.003"] + extra)
        return art

    def train(self, art, tag, extra, kill_rank0_after=None, expect_ok=True):
        """2 ranks; returns the process and the metrics file."""
        metrics = os.path.join(self.a.work, tag + ".jsonl")
        cmd = [self.a.tcc, "train", art, "--steps", str(STEPS),
               "--no-progress", "--metrics", metrics,
               "--checkpoint-every", "5", "--keep-checkpoints", "10"] \
            + self.data + extra
        if kill_rank0_after:
            # The test hook TCC_TEST_KILL_AFTER_STEP, for rank 0 only.
            cmd = ["sh", "-c",
                   'if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then '
                   f'export TCC_TEST_KILL_AFTER_STEP={kill_rank0_after}; fi; '
                   'exec "$@"', "sh"] + cmd
        cmd = [self.a.mpirun, "-np", "2", "--oversubscribe"] + cmd
        return run(cmd, expect_ok), metrics


def losses(path):
    return [json.loads(l)["loss"] for l in open(path)]


def same_tensors(what, got, want):
    if sorted(got) != sorted(want):
        fail(f"{what}: tensors {sorted(got)} != {sorted(want)}")
    for name, (dt, shape, kind, data) in want.items():
        g = got[name]
        if (g[0], g[1], g[2]) != (dt, shape, kind):
            fail(f"{what}: '{name}' is {g[2]} {g[0]} {g[1]}, expected "
                 f"{kind} {dt} {shape}")
        if g[3] != data:
            fail(f"{what}: '{name}' differs")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    c = Case(args)
    whole = c.compile("whole", [])
    zero = c.compile("zero2", ["--zero-shards", "2"])
    ck = {t: os.path.join(args.work, "ck_" + t) for t in
          ("whole", "zero", "cut")}

    _, m_whole = c.train(whole, "whole", ["--checkpoint-dir", ck["whole"]])
    _, m_zero = c.train(zero, "zero", ["--checkpoint-dir", ck["zero"]])
    if losses(m_zero) != losses(m_whole):
        fail("the sharded run's losses differ from the unsharded run's")
    moments = 0
    for step in (5, 10, 12):
        name = f"ckpt-{step:08d}.tcckpt"
        _, w = read_checkpoint(os.path.join(ck["whole"], name))
        _, z = read_checkpoint(os.path.join(ck["zero"], name))
        same_tensors(f"step {step}: sharded vs unsharded checkpoint", z, w)
        moments = sum(1 for n in z if n.endswith((".exp_avg", ".exp_avg_sq")))
    if moments == 0:
        fail("the checkpoints hold no AdamW moments")
    print(f"checkpoints of steps 5, 10, 12: sharded == unsharded "
          f"({moments} whole moments)")

    p, m_cut = c.train(zero, "cut", ["--checkpoint-dir", ck["cut"]],
                       kill_rank0_after=10, expect_ok=False)
    if p.returncode == 0:
        fail("the killed run returned 0")
    one = run([args.tcc, "train", zero, "--steps", str(STEPS),
               "--no-progress", "--resume", ck["cut"]] + c.data,
              expect_ok=False)
    if one.returncode == 0 or "run it as 2 ranks" not in one.stderr:
        fail("one process resuming a sharded checkpoint: expected the "
             f"refusal, got {one.returncode}:\n{one.stdout}{one.stderr}")
    p, _ = c.train(zero, "cut", ["--checkpoint-dir", ck["cut"],
                                 "--resume", ck["cut"]])
    if "resumed at step 10" not in p.stdout:
        fail("the summary does not say where it resumed:\n" + p.stdout)
    if losses(m_cut) != losses(m_zero):
        fail(f"killed at step 10 and resumed: losses {losses(m_cut)} != "
             f"uninterrupted {losses(m_zero)}")
    last = f"ckpt-{STEPS:08d}.tcckpt"
    same_tensors("resumed vs uninterrupted last checkpoint",
                 read_checkpoint(os.path.join(ck["cut"], last))[1],
                 read_checkpoint(os.path.join(ck["zero"], last))[1])
    print(f"killed after step 10 and resumed: {STEPS} losses and the last "
          "checkpoint bit-identical to the uninterrupted run")

    exported = {}
    for tag, art in (("whole", whole), ("zero", zero)):
        out = os.path.join(args.work, tag + ".onnx")
        run([args.tcc, "export", art, "--checkpoint", ck[tag], "-o", out])
        exported[tag] = {t.name: onnx.numpy_helper.to_array(t).tobytes()
                         for t in onnx.load(out).graph.initializer}
    if exported["zero"] != exported["whole"]:
        fail("tcc export of the sharded checkpoint differs from the "
             "unsharded one's")
    print("tcc export --checkpoint: sharded == unsharded")
    print("ok")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Checkpoint and resume: a training run that is killed and resumed gives
exactly (bit for bit) the per-step losses and final parameters of a run that
was never interrupted.

The example MLP trains on the bundled digits data (46 batches of 32 per
epoch, so the runs cross an epoch boundary and the resumed feeder must
reshuffle the same way). Cases:

1. a crash at a chosen step (TCC_TEST_KILL_AFTER_STEP=37, checkpoints every
   10 steps), resumed from ckpt-30;
2. real SIGKILLs at random moments (a checkpoint after every step, so kills
   often land in the middle of writing one), resumed after each;
3. the newest checkpoint truncated and a leftover temporary file: resume
   falls back to the one before and says so;
4. a checkpoint that cannot be written (file size limit): the run fails with
   a clear error, the earlier checkpoints stay intact and resume still works.

The metrics file of the interrupted and resumed runs must hold each step
once, with the losses of the uninterrupted run.
"""
import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time

SEED = 3


def fail(msg):
    sys.exit("FAIL: " + msg)


def run(cmd, expect_rc=0, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != expect_rc:
        fail(f"exit {p.returncode} (expected {expect_rc}): {' '.join(cmd)}\n"
             f"{p.stdout}\n{p.stderr}")
    return p


def metrics(path):
    rows = [json.loads(line) for line in open(path)]
    return [r["step"] for r in rows], [r["loss"] for r in rows], [r["epoch"] for r in rows]


class Case:
    def __init__(self, args, work, steps):
        self.tcc, self.work, self.steps = args.tcc, work, steps
        ex = args.examples
        self.data = ["--data", "x=" + os.path.join(ex, "digits", "train_x.npy"),
                     "--data", "labels=" + os.path.join(ex, "digits", "train_y.npy")]

    def train(self, name, *extra):
        """The `tcc train` command line writing name.jsonl and name.onnx."""
        return [self.tcc, "train", os.path.join(self.work, "mlp.tcc"), *self.data,
                "--steps", str(self.steps), "--seed", str(SEED), "--no-progress",
                "--metrics", os.path.join(self.work, name + ".jsonl"),
                "--export", os.path.join(self.work, name + ".onnx"), *extra]

    def same_as_reference(self, name, ref):
        steps, losses, epochs = metrics(os.path.join(self.work, name + ".jsonl"))
        rsteps, rlosses, repochs = metrics(os.path.join(self.work, ref + ".jsonl"))
        if steps != list(range(1, self.steps + 1)):
            fail(f"{name}: metrics steps are {steps}, expected 1..{self.steps} once each")
        if losses != rlosses or epochs != repochs:
            diff = next(i for i in range(len(losses)) if losses[i] != rlosses[i])
            fail(f"{name}: loss of step {diff + 1} is {losses[diff]!r}, the "
                 f"uninterrupted run has {rlosses[diff]!r}")
        a = open(os.path.join(self.work, name + ".onnx"), "rb").read()
        b = open(os.path.join(self.work, ref + ".onnx"), "rb").read()
        if a != b:
            fail(f"{name}: the exported parameters differ from the uninterrupted run's")
        print(f"{name}: {self.steps} losses and the final parameters are identical "
              f"to the uninterrupted run")


def ckpts(d):
    return sorted(f for f in os.listdir(d) if f.endswith(".tcckpt")) if os.path.isdir(d) else []


def crash_at_chosen_step(c):
    d = os.path.join(c.work, "ck1")
    env = dict(os.environ, TCC_TEST_KILL_AFTER_STEP="37")
    run(c.train("crash", "--checkpoint-dir", d, "--checkpoint-every", "10"),
        expect_rc=-signal.SIGKILL, env=env)
    if ckpts(d) != ["ckpt-00000010.tcckpt", "ckpt-00000020.tcckpt", "ckpt-00000030.tcckpt"]:
        fail(f"after a crash at step 37 the checkpoints are {ckpts(d)}")
    if len(metrics(os.path.join(c.work, "crash.jsonl"))[0]) != 37:
        fail("the crashed run should have written 37 metrics lines")
    # Kept for case 4: the state right after the crash.
    shutil.copytree(d, os.path.join(c.work, "ck4"))
    shutil.copy(os.path.join(c.work, "crash.jsonl"), os.path.join(c.work, "full.jsonl"))
    p = run(c.train("crash", "--checkpoint-dir", d, "--checkpoint-every", "10",
                    "--resume", d))
    for want in ["resuming from " + d + "/ckpt-00000030.tcckpt at step 30 of 60",
                 "dropped 7 line(s) past step 30"]:
        if want not in p.stderr:
            fail(f"resume should say '{want}':\n{p.stderr}")
    if "trained 30 steps (compiled, cpu, resumed at step 30)" not in p.stdout:
        fail("unexpected summary:\n" + p.stdout)
    c.same_as_reference("crash", "ref")
    if ckpts(d) != ["ckpt-00000040.tcckpt", "ckpt-00000050.tcckpt", "ckpt-00000060.tcckpt"]:
        fail(f"--keep-checkpoints 3 should leave 40, 50, 60: {ckpts(d)}")
    return d


def random_kills(c, rng):
    d = os.path.join(c.work, "ck2")
    log = os.path.join(c.work, "random.jsonl")
    cmd = c.train("random", "--checkpoint-dir", d, "--checkpoint-every", "1")
    kills = []
    for attempt in range(3):
        first = 1 + (kills[-1] if kills else 0)
        target = rng.randint(min(first, c.steps - 20), c.steps - 20)
        p = subprocess.Popen(cmd + (["--resume", d] if attempt else []),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Let it run until a random step has been reported, then kill it
        # wherever it is (in a step, writing metrics or a checkpoint).
        while p.poll() is None:
            try:
                lines = sum(1 for _ in open(log))
            except FileNotFoundError:
                lines = 0
            if lines >= target and ckpts(d):
                break
            time.sleep(0.0005)
        time.sleep(rng.uniform(0, 0.004))  # about one step with its checkpoint
        p.send_signal(signal.SIGKILL)
        err = p.communicate()[1].decode()
        if p.returncode != -signal.SIGKILL:
            fail(f"the run ended with {p.returncode} before it was killed:\n{err}")
        done = metrics(log)[0]
        tmp = [f for f in os.listdir(d) if f.endswith(".tmp")]
        print(f"  SIGKILL after {len(done)} steps (target {target}), checkpoints "
              f"{ckpts(d)[-1]}..., {'a temporary file left' if tmp else 'no temporary'}")
        kills.append(len(done))
    p = run(cmd + ["--resume", d])
    if "resuming from" not in p.stderr:
        fail("the final run did not resume:\n" + p.stderr)
    c.same_as_reference("random", "ref")


def fallback(c, d):
    newest = os.path.join(d, "ckpt-00000060.tcckpt")
    data = open(newest, "rb").read()
    open(newest, "wb").write(data[:len(data) // 2])
    open(os.path.join(d, "ckpt-00000070.tcckpt.tmp"), "wb").write(data[:1000])
    shutil.copy(os.path.join(c.work, "crash.jsonl"), os.path.join(c.work, "fallback.jsonl"))
    p = run(c.train("fallback", "--checkpoint-dir", d, "--checkpoint-every", "10",
                    "--resume", d))
    for want in [newest + ": truncated", "skipping it",
                 "resuming from the newest valid checkpoint, " + d + "/ckpt-00000050.tcckpt",
                 "dropped 10 line(s) past step 50"]:
        if want not in p.stderr:
            fail(f"falling back should say '{want}':\n{p.stderr}")
    c.same_as_reference("fallback", "ref")
    if open(newest, "rb").read() != data:
        fail("the rewritten ckpt-60 differs from the one the first run wrote")


def write_failure(c):
    d = os.path.join(c.work, "ck4")
    before = {f: open(os.path.join(d, f), "rb").read() for f in ckpts(d)}

    def limit_file_size():
        # Files may not grow past 200 KB (a checkpoint is ~316 KB): writes
        # fail with EFBIG, as on a full disk.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.RLIM_INFINITY))

    cmd = c.train("full", "--checkpoint-dir", d, "--checkpoint-every", "10", "--resume", d)
    p = run(cmd, expect_rc=1, preexec_fn=limit_file_size)
    want = (f"tcc train: error: {d}/ckpt-00000040.tcckpt: cannot write checkpoint: "
            f"writing {d}/ckpt-00000040.tcckpt.tmp: File too large")
    if want not in p.stderr:
        fail(f"a failed checkpoint write should report '{want}':\n{p.stderr}")
    after = {f: open(os.path.join(d, f), "rb").read() for f in ckpts(d)}
    if after != before or sorted(os.listdir(d)) != sorted(before):
        fail(f"a failed write changed the checkpoint directory: {sorted(os.listdir(d))}")
    run(cmd)
    c.same_as_reference("full", "ref")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    run([args.tcc, "compile", os.path.join(args.examples, "mlp.onnx"),
         "-o", os.path.join(args.work, "mlp.tcc"), "--batch", "32",
         "--optimizer", "adamw", "--lr", "0.003"])
    seed = int(os.environ.get("TCC_TEST_SEED", time.time_ns() % 100000))
    print(f"random seed {seed} (set TCC_TEST_SEED to repeat the kill targets)")
    rng = random.Random(seed)

    short = Case(args, args.work, 60)
    run(short.train("ref"))
    d = crash_at_chosen_step(short)
    fallback(short, d)
    write_failure(short)

    long = Case(args, os.path.join(args.work, "long"), 200)
    os.makedirs(long.work)
    shutil.copy(os.path.join(args.work, "mlp.tcc"), long.work)
    run(long.train("ref"))
    random_kills(long, rng)
    print("PASS")


if __name__ == "__main__":
    main()

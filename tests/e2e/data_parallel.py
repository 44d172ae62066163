#!/usr/bin/python3
"""Data-parallel training: `mpirun -np 2 tcc train` equals one process.

An artifact compiled at batch B with --data-parallel trained by 2 ranks
(each its share of every global batch of 2B, gradients averaged across them)
must give what the artifact compiled at batch 2B gives in one process: the
per-step losses (the mean over the ranks, written by rank 0) and the
exported parameters agree within rtol 1e-5 after 20 steps. Checked on the example MLP (digits) in file
order and shuffled, with --grad-accum 2 and with --clip-grad-norm, and on
the GPT example's character model over the bundled text, also with dropout
(rank r numbers a dropout op's n elements from r * n, so the ranks draw the
masks one process draws at 2B), with the generated fused kernels and with
--no-fuse; fp16 loss scaling skips the steps one process skips at batch B
with --grad-accum 2. Then:
  * a rank killed mid-run (SIGKILL) ends the whole run within seconds, with
    a non-zero status and a message naming the rank;
  * SIGTERM to one rank stops both after the same step, with a checkpoint,
    with the optimizer state whole or sharded (--zero-shards 2);
  * a 2-rank run killed after a checkpoint and resumed with 2 ranks equals
    the uninterrupted run; resuming it in one process is refused, naming
    both rank counts;
  * an artifact compiled without --data-parallel is refused by 2 ranks.
Skipped (exit 77) when mpirun is not installed.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
import onnx.numpy_helper

SKIP = 77
STEPS = 20
DP = ["--data-parallel"]


def fail(msg):
    sys.exit("FAIL: " + msg)


def run(cmd, env=None, expect_ok=True, timeout=120):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=timeout)
    if expect_ok and p.returncode != 0:
        fail(f"command failed ({p.returncode}): {' '.join(cmd)}\n"
             f"{p.stdout}\n{p.stderr}")
    return p


def mpirun_prefix(n):
    cmd = ["mpirun", "-np", str(n), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


class Case:
    def __init__(self, args):
        self.tcc = args.tcc
        self.work = args.work
        ex = self.examples = args.examples
        self.data = ["--data", "x=" + os.path.join(ex, "digits", "train_x.npy"),
                     "--data", "labels=" + os.path.join(ex, "digits", "train_y.npy")]
        self.mlp = os.path.join(ex, "mlp.onnx")

    def compile(self, model, tag, batch, opts):
        art = os.path.join(self.work, tag + ".tcc")
        run([self.tcc, "compile", model, "-o", art, "--batch", str(batch)] + opts)
        return art

    def train(self, art, tag, ranks, feed, opts, wrapper=None, expect_ok=True):
        """Trains `art` (one process when ranks == 1; each rank through the
        shell `wrapper` when given); returns the process, the metrics lines
        and the exported parameters."""
        metrics = os.path.join(self.work, tag + ".jsonl")
        out = os.path.join(self.work, tag + ".onnx")
        cmd = [self.tcc, "train", art, "--steps", str(STEPS), "--no-progress",
               "--metrics", metrics, "--export", out] + feed + opts
        if wrapper:
            cmd = ["sh", "-c", wrapper, "sh"] + cmd
        if ranks > 1:
            cmd = mpirun_prefix(ranks) + cmd
        p = run(cmd, expect_ok=expect_ok)
        if not expect_ok:
            return p
        lines = [json.loads(l) for l in open(metrics)]
        params = {t.name: onnx.numpy_helper.to_array(t)
                  for t in onnx.load(out).graph.initializer}
        return p, lines, params

    def compare(self, name, one, two, rtol=1e-5, atol=1e-6,
                what="2 ranks == 1 process"):
        _, l1, p1 = one
        p, l2, p2 = two
        if len(l1) != STEPS or len(l2) != STEPS:
            fail(f"{name}: {len(l1)} and {len(l2)} metrics lines, expected "
                 f"{STEPS} each")
        np.testing.assert_allclose([l["loss"] for l in l2],
                                   [l["loss"] for l in l1], rtol=rtol,
                                   atol=atol, err_msg=f"{name}: losses differ")
        if l1[0].get("grad_norm") is not None:
            np.testing.assert_allclose(
                [l["grad_norm"] for l in l2], [l["grad_norm"] for l in l1],
                rtol=rtol, err_msg=f"{name}: grad norms differ")
        worst = 0.0
        for k, v in p1.items():
            np.testing.assert_allclose(p2[k], v, rtol=rtol, atol=atol,
                                       err_msg=f"{name}: parameter {k} differs")
            finite = np.isfinite(v)  # the causal mask holds -inf
            diff = np.abs(p2[k][finite] - v[finite])
            worst = max(worst, float(np.max(diff, initial=0.0)))
        if "2 ranks \u00d7" not in p.stdout:
            fail(f"{name}: the summary does not name the ranks:\n{p.stdout}")
        print(f"{name}: {what} over {STEPS} steps "
              f"(max abs param diff {worst:.1e})")


def equivalence(c, name, model, batch, copts, feed, topts, atol=1e-6):
    """`model` compiled at 2*batch in one process vs at `batch` on 2 ranks."""
    tag = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
    one = c.train(c.compile(model, tag + "_1x", 2 * batch, copts),
                  tag + "_1x", 1, feed, topts)
    two = c.train(c.compile(model, tag + "_2x", batch, copts + DP),
                  tag + "_2x", 2, feed, topts)
    c.compare(name, one, two, atol=atol)


def kill_rank_after(rank, step):
    """A shell wrapper that makes rank `rank` SIGKILL itself after step
    `step` (the test hook TCC_TEST_KILL_AFTER_STEP, set for that rank)."""
    return (f'if [ "$OMPI_COMM_WORLD_RANK" = {rank} ]; then '
            f'export TCC_TEST_KILL_AFTER_STEP={step}; fi; exec "$@"')


def killed_rank(c):
    """Rank 1 SIGKILLs itself after step 3 of a long run."""
    art = c.compile(c.mlp, "kill", 8, ["--optimizer", "sgd", "--lr", "0.05"] + DP)
    wrapper = kill_rank_after(1, 3)
    cmd = mpirun_prefix(2) + ["sh", "-c", wrapper, "sh", c.tcc, "train", art,
                              "--steps", "100000000", "--no-progress"] + c.data
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    took = time.time() - t0
    out = p.stdout + p.stderr
    if p.returncode == 0:
        fail("killed rank: mpirun returned 0\n" + out)
    if "rank 1" not in out:
        fail("killed rank: the output does not name rank 1:\n" + out)
    if took > 20:
        fail(f"killed rank: the run took {took:.1f} s to end")
    print(f"killed rank: mpirun ended in {took:.1f} s, status {p.returncode}, "
          f"naming rank 1")


def sigterm_one_rank(c, tag="term", copts=("--optimizer", "sgd", "--lr",
                                             "0.05")):
    """SIGTERM to rank 1 alone: both ranks stop after the same step, rank 0
    checkpoints it and says so (with --zero-shards the stop's checkpoint
    is a collective: every rank gathers its shards for rank 0)."""
    art = c.compile(c.mlp, tag, 8, list(copts) + DP)
    ck = os.path.join(c.work, tag + "_ckpt")
    shutil.rmtree(ck, ignore_errors=True)
    pids = os.path.join(c.work, tag + "_pid")
    metrics = os.path.join(c.work, tag + ".jsonl")
    for f in (pids + ".0", pids + ".1", metrics):
        if os.path.exists(f):
            os.remove(f)
    wrapper = f'echo $$ > {pids}.$OMPI_COMM_WORLD_RANK; exec "$@"'
    cmd = mpirun_prefix(2) + ["sh", "-c", wrapper, "sh", c.tcc, "train", art,
                              "--steps", "100000000", "--no-progress",
                              "--metrics", metrics, "--checkpoint-dir", ck] + c.data
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        if (os.path.exists(pids + ".1") and os.path.exists(metrics)
                and sum(1 for _ in open(metrics)) >= 5):
            break
        time.sleep(0.05)
    else:
        p.kill()
        fail("SIGTERM: the run did not get going:\n" + "".join(p.communicate()))
    os.kill(int(open(pids + ".1").read()), signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("SIGTERM: the ranks did not stop within 30 s")
    lines = [json.loads(l) for l in open(metrics)]
    last = lines[-1]["step"]
    want = f"interrupted at step {last}; checkpoint written to"
    if want not in err:
        fail(f"SIGTERM: expected '{want}' from rank 0:\n{out}\n{err}")
    if not os.path.exists(os.path.join(ck, "ckpt-%08d.tcckpt" % last)):
        fail(f"SIGTERM: no checkpoint of step {last} in {ck}")
    print(f"SIGTERM to rank 1 ({tag}): both ranks stopped after step {last}, "
          f"checkpointed (status {p.returncode})")


def resume(c):
    """Rank 0 killed after its checkpoint of step 10 (rank 1 then waits in
    step 11 until mpirun ends it), resumed with 2 ranks: the same losses and
    parameters as the run that was not interrupted."""
    copts = ["--optimizer", "adamw", "--lr", "0.003"] + DP
    art = c.compile(c.mlp, "resume", 8, copts)
    topts = ["--checkpoint-every", "5"]
    ck_ref, ck = os.path.join(c.work, "ck_ref"), os.path.join(c.work, "ck_cut")
    for d in (ck_ref, ck):
        shutil.rmtree(d, ignore_errors=True)
    ref = c.train(art, "resume_ref", 2, c.data,
                  topts + ["--checkpoint-dir", ck_ref])
    p = c.train(art, "resume_cut", 2, c.data, topts + ["--checkpoint-dir", ck],
                wrapper=kill_rank_after(0, 10), expect_ok=False)
    if p.returncode == 0:
        fail("resume: the killed run returned 0")
    # Another rank count is refused, naming both.
    one = run([c.tcc, "train", art, "--steps", str(STEPS), "--no-progress",
               "--resume", ck] + c.data, expect_ok=False)
    want = "its run had 2 rank(s) (global batch 16), this run has 1"
    if one.returncode == 0 or want not in one.stderr:
        fail(f"resume: one process resuming a 2-rank checkpoint: expected "
             f"'{want}':\n{one.stdout}\n{one.stderr}")
    got = c.train(art, "resume_cut", 2, c.data,
                  topts + ["--checkpoint-dir", ck, "--resume", ck])
    if "resumed at step 10" not in got[0].stdout:
        fail("resume: the summary does not say where it resumed:\n" +
             got[0].stdout)
    c.compare("checkpoint + resume", ref, got, rtol=1e-6, atol=1e-7,
              what="killed at step 10 and resumed == uninterrupted")


def fp16(c):
    """fp16 loss scaling, on inputs scaled so that the scaled gradients
    overflow at the first steps. A rank's gradients are those of its own B
    samples (each twice its share of the global mean), so they overflow
    where a one-process batch of 2B may not, as with PyTorch's DDP: the
    one-process run that overflows alike is batch B with --grad-accum 2
    (the same samples per step, gradients of B at a time). The ranks skip
    the steps it skips, with the same loss scale after each: an overflow on
    either rank reaches both through the averaged gradients."""
    x = np.load(os.path.join(c.examples, "digits", "train_x.npy"))
    big = os.path.join(c.work, "big_x.npy")
    np.save(big, (x * 100).astype(np.float32))
    feed = ["--data", "x=" + big, "--data", "labels=" +
            os.path.join(c.examples, "digits", "train_y.npy")]
    copts = ["--precision", "fp16", "--optimizer", "sgd", "--lr", "0.01"]
    tag = "fp16"
    one = c.train(c.compile(c.mlp, tag + "_1x", 8, copts + ["--grad-accum", "2"]),
                  tag + "_1x", 1, feed, ["--no-shuffle"])
    two = c.train(c.compile(c.mlp, tag + "_2x", 8, copts + DP), tag + "_2x",
                  2, feed, ["--no-shuffle"])
    skips = [l["skipped"] for l in one[1]]
    if not any(skips):
        fail(f"fp16: no step was skipped: {one[1]}")
    if [l["skipped"] for l in two[1]] != skips or \
            [l["loss_scale"] for l in two[1]] != [l["loss_scale"] for l in one[1]]:
        fail(f"fp16: the ranks skipped other steps than one process:\n"
             f"{one[1]}\n{two[1]}")
    print(f"fp16: 2 ranks skip the steps one process skips "
          f"({sum(skips)} of {STEPS})")
    c.compare("fp16", one, two, what="2 ranks == 1 process with --grad-accum 2")


def refused(c):
    """An artifact compiled without --data-parallel would train N separate
    copies: several ranks refuse it, naming the flag."""
    art = c.compile(c.mlp, "plain", 8, [])
    p = run(mpirun_prefix(2) + [c.tcc, "train", art, "--steps", "2",
                                "--no-progress"] + c.data, expect_ok=False)
    want = "compiled without --data-parallel"
    if p.returncode == 0 or want not in p.stderr:
        fail(f"refused: expected '{want}':\n{p.stdout}\n{p.stderr}")
    print("an artifact without --data-parallel is refused by 2 ranks")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="",
                    help="comma-separated parts to run (default: all)")
    args = ap.parse_args()
    if not shutil.which("mpirun"):
        print("SKIP: mpirun not found (Debian: apt install openmpi-bin "
              "libopenmpi-dev)")
        return SKIP
    os.makedirs(args.work, exist_ok=True)
    c = Case(args)
    sgd = ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"]
    adamw = ["--optimizer", "adamw", "--lr", "0.003"]
    # AdamW divides by sqrt(v): where a gradient is near zero, the sum's
    # order (two ranks' halves all-reduced, or one batch) moves the update
    # by a visible fraction of the step. Parameters then agree within a
    # thousandth of a step (lr * 1e-3), not the SGD cases' 1e-6.
    adamw_atol = 0.003 * 1e-3
    parts = {
        "file-order": lambda: equivalence(c, "mlp --no-shuffle", c.mlp, 8, sgd,
                                          c.data, ["--no-shuffle"]),
        "shuffled": lambda: equivalence(c, "mlp shuffled", c.mlp, 8, adamw,
                                        c.data, ["--seed", "3"],
                                        atol=adamw_atol),
        "grad-accum": lambda: equivalence(c, "mlp --grad-accum 2", c.mlp, 4,
                                          sgd + ["--grad-accum", "2"], c.data,
                                          ["--seed", "1"]),
        "clip": lambda: equivalence(c, "mlp --clip-grad-norm", c.mlp, 8,
                                    adamw + ["--clip-grad-norm", "0.5"],
                                    c.data, ["--no-shuffle"],
                                    atol=adamw_atol),
        "gpt": lambda: gpt(c, args.examples),
        "dropout": lambda: gpt_dropout(c, args.examples),
        "killed": lambda: killed_rank(c),
        "sigterm": lambda: sigterm_one_rank(c),
        "sigterm-zero": lambda: sigterm_one_rank(
            c, "term_zero", adamw + ["--zero-shards", "2"]),
        "resume": lambda: resume(c),
        "fp16": lambda: fp16(c),
        "refused": lambda: refused(c),
    }
    only = [p for p in args.only.split(",") if p]
    for name, part in parts.items():
        if not only or name in only:
            part()
    return 0


def gpt(c, examples):
    """The GPT example's character model (T = 32 to stay fast) on the
    bundled text, in order and shuffled, batch 2 per rank vs 4 in one
    process."""
    model = os.path.join(c.work, "gpt.onnx")
    if not os.path.exists(model):
        run(["/usr/bin/python3", os.path.join(examples, "make_gpt.py"), "-o",
             model, "--seq", "32"], timeout=300)
    feed = ["--tokens", os.path.join(examples, "text", "licenses.txt")]
    # SGD: AdamW turns the rounding noise of gradients that are zero in
    # exact arithmetic (the attention's key bias) into steps of +-lr, which
    # no summation order reproduces (see grad_accum.py).
    copts = ["--freeze", "mask", "--optimizer", "sgd", "--lr", "0.1",
             "--momentum", "0.9"]
    equivalence(c, "gpt --no-shuffle", model, 2, copts, feed, ["--no-shuffle"])
    equivalence(c, "gpt shuffled", model, 2, copts, feed, ["--seed", "5"])


def gpt_dropout(c, examples):
    """The GPT example with dropout 0.1 (on the attention weights, after
    attention and in the feed-forward: tensors whose leading dimension is
    the batch): 2 ranks at batch 2 draw the masks one process draws at 4,
    so the runs agree, with the generated fused kernels and without. Were
    the ranks to repeat one mask, rank 1's rows would see rank 0's draws and
    the losses would part."""
    model = os.path.join(c.work, "gpt_dropout.onnx")
    if not os.path.exists(model):
        run(["/usr/bin/python3", os.path.join(examples, "make_gpt.py"), "-o",
             model, "--seq", "32", "--dropout", "0.1"], timeout=300)
    feed = ["--tokens", os.path.join(examples, "text", "licenses.txt")]
    copts = ["--freeze", "mask", "--optimizer", "sgd", "--lr", "0.1",
             "--momentum", "0.9"]
    for fuse in ([], ["--no-fuse"]):
        name = "gpt dropout 0.1" + (" --no-fuse" if fuse else "")
        art = c.compile(model, "dropout_check", 2, copts + fuse + DP)
        sched = run([c.tcc, "inspect", art, "--schedule"]).stdout
        if sched.count("dropout") < 6:
            fail(f"{name}: expected dropout kernels in the schedule:\n"
                 f"{sched[:2000]}")
        equivalence(c, name, model, 2, copts + fuse, feed, ["--no-shuffle"])


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Graceful stop: SIGINT (Ctrl-C) and SIGTERM make `tcc train` finish the
step in progress, write a checkpoint of it (with --checkpoint-dir, whatever
--checkpoint-every says), say where, and exit with 128 + the signal (130,
143); a second SIGINT meanwhile is ignored. Resuming from that checkpoint gives bit for bit the losses and final
parameters of a run that was never interrupted.

The example MLP trains on the bundled digits data with batch 32.
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

STEPS = 2000
SEED = 5


def fail(msg):
    sys.exit("FAIL: " + msg)


def run(cmd, expect_rc=0):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != expect_rc:
        fail(f"exit {p.returncode} (expected {expect_rc}): {' '.join(cmd)}\n"
             f"{p.stdout}\n{p.stderr}")
    return p


def metrics(path):
    rows = [json.loads(line) for line in open(path)]
    return [r["step"] for r in rows], [r["loss"] for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    w = args.work
    model = os.path.join(w, "mlp.tcc")
    run([args.tcc, "compile", os.path.join(args.examples, "mlp.onnx"),
         "-o", model, "--batch", "32", "--optimizer", "sgd", "--lr", "0.01"])
    data = ["--data", "x=" + os.path.join(args.examples, "digits", "train_x.npy"),
            "--data", "labels=" + os.path.join(args.examples, "digits", "train_y.npy")]

    def train(name, *extra):
        return [args.tcc, "train", model, *data, "--steps", str(STEPS),
                "--seed", str(SEED), "--no-progress",
                "--metrics", os.path.join(w, name + ".jsonl"),
                "--export", os.path.join(w, name + ".onnx"), *extra]

    run(train("ref"))
    _, ref_losses = metrics(os.path.join(w, "ref.jsonl"))

    for sig, rc in [(signal.SIGINT, 130), (signal.SIGTERM, 143)]:
        name = sig.name.lower()
        d = os.path.join(w, "ck-" + name)
        log = os.path.join(w, name + ".jsonl")
        # --checkpoint-every far beyond the run: the interrupt alone writes one.
        cmd = train(name, "--checkpoint-dir", d, "--checkpoint-every", "100000")
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        deadline = time.time() + 10
        while p.poll() is None and time.time() < deadline:
            try:
                if sum(1 for _ in open(log)) >= 5:
                    break
            except FileNotFoundError:
                pass
            time.sleep(0.001)
        p.send_signal(sig)
        if sig == signal.SIGINT:
            # A second Ctrl-C while it stops is ignored: the checkpoint of
            # the step is still written, the exit code is the same.
            p.send_signal(sig)
        out, err = p.communicate(timeout=30)
        if p.returncode != rc:
            fail(f"{name}: exit {p.returncode}, expected {rc}\n{out}\n{err}")
        steps, losses = metrics(log)
        last = steps[-1]
        if last >= STEPS:
            fail(f"{name}: the run finished before the signal; raise STEPS")
        if steps != list(range(1, last + 1)) or losses != ref_losses[:last]:
            fail(f"{name}: the metrics before the interrupt differ from the reference")
        ckpt = os.path.join(d, "ckpt-%08d.tcckpt" % last)
        want = f"interrupted at step {last}; checkpoint written to {ckpt}"
        if want not in err:
            fail(f"{name}: expected '{want}' on stderr:\n{err}")
        if sorted(os.listdir(d)) != [os.path.basename(ckpt)]:
            fail(f"{name}: the checkpoint directory holds {sorted(os.listdir(d))}, "
                 f"expected only the checkpoint of step {last}")
        if os.path.exists(os.path.join(w, name + ".onnx")):
            fail(f"{name}: an interrupted run must not export")
        print(f"{name}: stopped at step {last} with exit {rc}, {ckpt} written")

        p = run(cmd + ["--resume", d])
        if f"resuming from {ckpt} at step {last}" not in p.stderr:
            fail(f"{name}: resume did not start at step {last}:\n{p.stderr}")
        steps, losses = metrics(log)
        if steps != list(range(1, STEPS + 1)) or losses != ref_losses:
            fail(f"{name}: the resumed losses differ from the uninterrupted run")
        a = open(os.path.join(w, name + ".onnx"), "rb").read()
        if a != open(os.path.join(w, "ref.onnx"), "rb").read():
            fail(f"{name}: the exported parameters differ from the uninterrupted run")
        print(f"{name}: resumed to the same {STEPS} losses and final parameters")

    # Without --checkpoint-dir it still stops cleanly and says so.
    log = os.path.join(w, "nockpt.jsonl")
    p = subprocess.Popen(train("nockpt"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 10
    while p.poll() is None and time.time() < deadline:
        if os.path.exists(log) and sum(1 for _ in open(log)) >= 3:
            break
        time.sleep(0.001)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    last = metrics(log)[0][-1]
    if p.returncode != 130 or not re.search(
            rf"interrupted at step {last}; no checkpoint \(no --checkpoint-dir\)", err):
        fail(f"without a checkpoint dir: exit {p.returncode}\n{err}")
    print("PASS")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The README demo as a test: the bundled MLP reaches >= 90% held-out
accuracy on the bundled digits data, in compiled and in eager mode."""
import argparse
import os
import re
import subprocess
import sys


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    art = os.path.join(args.work, "mlp.tcc")
    ex = args.examples
    run([args.tcc, "compile", os.path.join(ex, "mlp.onnx"), "-o", art,
         "--batch", "32", "--optimizer", "adamw", "--lr", "0.003"])
    for mode in ([], ["--eager"]):
        out = run([args.tcc, "train", art, "--epochs", "15", "--seed", "1",
                   "--no-progress",
                   "--data", "x=" + os.path.join(ex, "digits", "train_x.npy"),
                   "--data", "labels=" + os.path.join(ex, "digits", "train_y.npy"),
                   "--eval-data", "x=" + os.path.join(ex, "digits", "test_x.npy"),
                   "--eval-data", "labels=" + os.path.join(ex, "digits", "test_y.npy")]
                  + mode)
        m = re.search(r"accuracy ([0-9.]+)%", out)
        if not m:
            sys.exit("no accuracy in output:\n" + out)
        acc = float(m.group(1))
        print(f"digits {'eager' if mode else 'compiled'}: held-out accuracy {acc:.2f}%")
        if acc < 90.0:
            sys.exit(f"accuracy {acc}% is below 90%")


if __name__ == "__main__":
    main()

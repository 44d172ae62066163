#!/usr/bin/python3
"""Splits the bundled digits data set into train and held-out .npy files.

digits.csv.gz is scikit-learn's copy of the UCI optical digits (1797 8x8
images, 16 grey levels, label in the last column), shipped here so the demo
needs nothing else. Pixels are scaled to [0, 1]; the split is a fixed
permutation, so the files are reproducible.
"""
import argparse
import gzip
import os

import numpy as np


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--csv", default=os.path.join(here, "digits", "digits.csv.gz"))
    ap.add_argument("--out", default=os.path.join(here, "digits"))
    ap.add_argument("--test", type=int, default=320, help="held-out samples")
    args = ap.parse_args()
    with gzip.open(args.csv, "rt") as f:
        data = np.loadtxt(f, delimiter=",")
    x = (data[:, :-1] / 16.0).astype(np.float32)
    y = data[:, -1].astype(np.int64)
    perm = np.random.RandomState(0).permutation(len(y))
    test, train = perm[:args.test], perm[args.test:]
    for name, idx in (("train", train), ("test", test)):
        np.save(os.path.join(args.out, f"{name}_x.npy"), x[idx])
        np.save(os.path.join(args.out, f"{name}_y.npy"), y[idx])
    print(f"train {len(train)}, test {len(test)} samples in {args.out}")


if __name__ == "__main__":
    main()

"""Writes small .npy/.csv data sets for the tool tests.

usage: make_data.py OUTDIR  (files for the 64-input, 10-class example MLP)
"""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.RandomState(0)
np.save(os.path.join(out, "x.npy"), rng.rand(40, 64).astype(np.float32))
np.save(os.path.join(out, "y.npy"), rng.randint(0, 10, 40).astype(np.int64))
np.save(os.path.join(out, "y_short.npy"), rng.randint(0, 10, 30).astype(np.int64))
np.save(os.path.join(out, "y_bad_class.npy"), np.full(40, 12, dtype=np.int64))
np.save(os.path.join(out, "y_frac.npy"), np.full(40, 1.5, dtype=np.float32))
np.save(os.path.join(out, "x_wrong.npy"), rng.rand(40, 8, 8).astype(np.float32))
x_nan = rng.rand(40, 64).astype(np.float32)
x_nan[7, 3] = np.nan
np.save(os.path.join(out, "x_nan.npy"), x_nan)
np.savetxt(os.path.join(out, "x.csv"), rng.rand(40, 64), delimiter=",")
np.savetxt(os.path.join(out, "y.csv"), rng.randint(0, 10, 40), delimiter=",", fmt="%d")
with open(os.path.join(out, "x_trunc.npy"), "wb") as f:
    f.write(open(os.path.join(out, "x.npy"), "rb").read()[:500])

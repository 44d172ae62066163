"""Data files with one problem each, for errors-data.test.

usage: make_bad_data.py OUTDIR   (after make_data.py OUTDIR: reads x.npy, y.npy)
"""
import os
import sys

import numpy as np

out = sys.argv[1]
x = np.load(os.path.join(out, "x.npy"))  # f32 [40, 64]
y = np.load(os.path.join(out, "y.npy"))  # i64 [40]


def path(name):
    return os.path.join(out, name)


def csv(name, rows):
    with open(path(name), "w") as f:
        f.write("\n".join(rows) + "\n")


def rows(a):
    return [",".join("%g" % v for v in r) for r in a]


a = x.copy()
a[13, 5] = np.inf
np.save(path("x_inf.npy"), a)
b = x.astype(np.float64)
b[3, 0] = 1e300
np.save(path("x_big.npy"), b)
np.save(path("x_f16.npy"), x.astype(np.float16))
np.save(path("x_fortran.npy"), np.asfortranarray(x))
with open(path("x_header.npy"), "wb") as f:  # "False" misspelt
    f.write(open(path("x.npy"), "rb").read().replace(b"False", b"Flase", 1))
with open(path("x.bin"), "wb") as f:
    f.write(x.tobytes())

r = rows(x)
r[9] = ",".join(["1", "2", "nan"] + ["0"] * 61)
csv("x_nan.csv", r)
r = rows(x)
r[4] = ",".join(["1", "2", "abc"] + ["0"] * 61)
csv("x_text.csv", r)
r = rows(x)
r[6] = "1,2"
csv("x_ragged.csv", r)
r = rows(x)
r[2] = ",".join(["1", ""] + ["0"] * 62)
csv("x_empty_field.csv", r)
csv("x_header_only.csv", ["a,b,c"])
labels = [str(int(v)) for v in y]
labels[5] = "-inf"
csv("y_inf.csv", labels)

# Token corpora for lm.onnx (vocabulary 256, T = 8, batch 4).
with open(path("short.tok"), "wb") as f:
    f.write(b"abc")
with open(path("odd.tok"), "wb") as f:
    f.write(b"x" * 41)
with open(path("few.tok"), "wb") as f:  # 2 windows of 9 tokens
    f.write(b"y" * 20)
# uint16 tokens beyond the vocabulary: as inputs, as the last label only.
np.arange(300, 340, dtype="<u2").tofile(path("big.u16"))
t = np.full(33, 7, dtype="<u2")
t[32] = 300
t.tofile(path("label.u16"))

# .npy files damaged in one way each (x.npy's header is "{'descr': '<f4',
# 'fortran_order': False, 'shape': (40, 64), }").
npy = open(path("x.npy"), "rb").read()
np.save(path("scalar.npy"), np.float32(3))  # a 0-d array: no samples
with open(path("x_v4.npy"), "wb") as f:  # format version 4
    f.write(npy[:6] + bytes([4]) + npy[7:])
with open(path("x_tail.npy"), "wb") as f:  # 4 bytes after the data
    f.write(npy + b"\0" * 4)
with open(path("x_cut_header.npy"), "wb") as f:  # cut inside the header
    f.write(npy[:40])
with open(path("x_key.npy"), "wb") as f:
    f.write(npy.replace(b"'fortran_order'", b"'fortran_ordex'", 1))
with open(path("x_negdim.npy"), "wb") as f:  # same header length
    f.write(npy.replace(b"(40, 64)", b"(-4, 64)", 1))
with open(path("x_huge.npy"), "wb") as f:
    f.write(npy.replace(b"(40, 64)", b"(4000000000, 4000000000)", 1))

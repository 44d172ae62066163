#!/usr/bin/python3
"""ZeRO (--zero-shards 2) with clipping, --track-grad-norm and fp16 scaling.

Each rank holds only its shard of the averaged gradients, so the global
norm is each rank's sum of squares added over the ranks
(tcc.sharded_global_norm) and fp16's overflow check reads that sum too.
The example MLP (AdamW) is compiled for two data-parallel ranks with the
whole optimizer state on every rank (--data-parallel) and sharded
(--zero-shards 2), and trained 20 steps under `mpirun -np 2`, rank r on its
own data file (--no-shuffle):

  clip      --clip-grad-norm 0.2, which clips (most steps' norm is above)
  noclip    --clip-grad-norm 10, which never does
  track     --track-grad-norm
  fp16      --precision fp16 on inputs times 64, so that the first steps
            and a later one overflow f16 and are skipped

The metrics' losses and grad_norm, and the exported parameters, must agree
with the unsharded run (rtol 1e-6; the norm's partial sums are added in
another order, rank by rank, which can move the last bit), and with fp16
the same steps must be skipped with the same loss scales. It prints the
largest relative differences it saw.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper

STEPS = 20
RTOL = 1e-6


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=300)
    if p.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout + p.stderr


def train(args, tag, extra, data):
    art = os.path.join(args.work, tag + ".tcc")
    run([args.tcc, "compile", os.path.join(args.examples, "mlp.onnx"),
         "-o", art, "--batch", "16", "--data-parallel", "--optimizer",
         "adamw", "--lr", "0.003"] + extra)
    base = os.path.join(args.work, tag)
    # Each rank writes files of its own name (rank 0 alone writes on this
    # tcc; the others would race on one name otherwise).
    script = ('r=$OMPI_COMM_WORLD_RANK; exec "$0" train "$1" --steps %d '
              '--no-shuffle --no-progress '
              '--data x="$2.$r.x.npy" --data labels="$3.$r.y.npy" '
              '--metrics "$4.$r.jsonl" --export "$4.$r.onnx"' % STEPS)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    run([args.mpirun, "-np", "2", "--oversubscribe", "sh", "-c", script,
         args.tcc, art, data, args.labels, base], env=env)
    metrics = [json.loads(l) for l in open(base + ".0.jsonl")]
    params = {t.name: onnx.numpy_helper.to_array(t)
              for t in onnx.load(base + ".0.onnx").graph.initializer}
    if len(metrics) != STEPS:
        sys.exit(f"{tag}: {len(metrics)} steps in the metrics, not {STEPS}")
    return metrics, params


def rel_diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-30)))


def write_rank_data(args):
    """Rank 0 the digits, rank 1 their rows reversed; and x times 64."""
    args.labels = os.path.join(args.work, "digits")
    x = np.load(os.path.join(args.examples, "digits", "train_x.npy"))
    y = np.load(os.path.join(args.examples, "digits", "train_y.npy"))
    for r, order in ((0, slice(None)), (1, slice(None, None, -1))):
        np.save(f"{args.labels}.{r}.x.npy", np.ascontiguousarray(x[order]))
        np.save(f"{args.labels}.{r}.y.npy", np.ascontiguousarray(y[order]))
        np.save(f"{args.labels}.big.{r}.x.npy",
                np.ascontiguousarray(x[order] * 64).astype(np.float32))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    write_rank_data(args)
    plain, big = args.labels, args.labels + ".big"
    for name, extra, data in (
            ("clip", ["--clip-grad-norm", "0.2"], plain),
            ("noclip", ["--clip-grad-norm", "10"], plain),
            ("track", ["--track-grad-norm"], plain),
            ("fp16", ["--precision", "fp16"], big)):
        whole_m, whole_p = train(args, name + "_whole", extra, data)
        zero_m, zero_p = train(args, name + "_zero2",
                               extra + ["--zero-shards", "2"], data)
        losses = [m["loss"] for m in zero_m]
        ref = [m["loss"] for m in whole_m]
        np.testing.assert_allclose(losses, ref, rtol=RTOL, atol=1e-7,
                                   err_msg=f"{name}: losses")
        worst = max(rel_diff(zero_p[k], v) for k, v in whole_p.items())
        for k, v in whole_p.items():
            np.testing.assert_allclose(zero_p[k], v, rtol=RTOL, atol=1e-7,
                                       err_msg=f"{name}: parameter {k}")
        line = (f"{name}: {STEPS} steps, losses {ref[0]:.5f} -> "
                f"{ref[-1]:.5f}, max rel diff losses "
                f"{rel_diff(losses, ref):.2e}, parameters {worst:.2e}")
        if name != "fp16":
            norms = [m["grad_norm"] for m in zero_m]
            ref_n = [m["grad_norm"] for m in whole_m]
            np.testing.assert_allclose(norms, ref_n, rtol=RTOL,
                                       err_msg=f"{name}: grad_norm")
            clipped = sum(n > 0.2 for n in ref_n)
            if name == "clip" and clipped < STEPS // 2:
                sys.exit(f"clip: only {clipped} of {STEPS} steps clip")
            if name == "noclip" and max(ref_n) >= 10:
                sys.exit(f"noclip: a norm of {max(ref_n)} clips")
            same = sum(a == b for a, b in zip(norms, ref_n))
            line += (f", grad_norm max rel diff {rel_diff(norms, ref_n):.2e} "
                     f"({same} of {STEPS} bit-identical; "
                     f"{clipped} steps above 0.2)")
        else:
            skips = [m["skipped"] for m in zero_m]
            ref_s = [m["skipped"] for m in whole_m]
            if skips != ref_s:
                sys.exit(f"fp16: skipped steps {skips}, unsharded {ref_s}")
            scales = [m["loss_scale"] for m in zero_m]
            if scales != [m["loss_scale"] for m in whole_m]:
                sys.exit("fp16: the loss scales differ")
            skipped = [i + 1 for i, s in enumerate(ref_s) if s]
            # The check must have had something to catch, after the start.
            if not skipped or skipped[-1] <= skipped[0] + len(skipped) - 1:
                sys.exit(f"fp16: skipped steps {skipped}: none after a "
                         "finite one, the test checks nothing")
            line += f", skipped steps {skipped} in both"
        print(line)
    print("ok")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Sharded optimizer state (--zero-shards 2) trains as the unsharded step.

The example MLP (AdamW, SGD with momentum, AdamW in bf16) is compiled for
two data-parallel ranks twice, with the whole optimizer state on every
rank (--data-parallel) and with it sharded over the two (--zero-shards 2),
and each is trained for 20 steps under `mpirun -np 2`, rank r on its own
data file in file order (--no-shuffle). The losses and the exported
parameters of every rank must agree (rtol 1e-5): the shards are averaged
by a reduce-scatter instead of an all-reduce and updated piecewise, which
changes no arithmetic. The compile report must show each rank holding 1/2
of the unsharded optimizer state (+-1%).
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper

STEPS = 20


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=300)
    if p.returncode != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout + p.stderr


def state_ratio(report):
    """(per rank, unsharded) optimizer state bytes from `--report`."""
    per = re.search(r"optimizer state per rank .*\((\d+) bytes\)", report)
    full = re.search(r"unsharded +.*\((\d+) bytes\)", report)
    if not per or not full:
        sys.exit("the report has no sharded optimizer state lines:\n" + report)
    return int(per.group(1)), int(full.group(1))


def train(args, tag, extra):
    art = os.path.join(args.work, tag + ".tcc")
    report = run([args.tcc, "compile", os.path.join(args.examples, "mlp.onnx"),
                  "-o", art, "--batch", "16", "--data-parallel", "--report"]
                 + args.opt + extra)
    base = os.path.join(args.work, tag)
    # Each rank writes files of its own name (on a tcc where every rank
    # writes, they would otherwise race).
    # Rank r trains on data file r (the rows in another order on rank 1),
    # so the ranks' gradients differ and their average is checked, not
    # only each rank's own. Each rank writes files of its own name (on a
    # tcc where every rank writes, they would otherwise race).
    script = ('r=$OMPI_COMM_WORLD_RANK; exec "$0" train "$1" --steps %d '
              '--no-shuffle --no-progress '
              '--data x="$2.$r.x.npy" --data labels="$2.$r.y.npy" '
              '--metrics "$3.$r.jsonl" --export "$3.$r.onnx"' % STEPS)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    run([args.mpirun, "-np", "2", "--oversubscribe", "sh", "-c", script,
         args.tcc, art, args.data, base], env=env)
    ranks = {}
    for r in (0, 1):
        if not os.path.exists(f"{base}.{r}.jsonl"):
            continue  # a tcc where rank 0 alone writes
        losses = [json.loads(l)["loss"] for l in open(f"{base}.{r}.jsonl")]
        params = {t.name: onnx.numpy_helper.to_array(t)
                  for t in onnx.load(f"{base}.{r}.onnx").graph.initializer}
        ranks[r] = (losses, params)
    if not ranks:
        sys.exit(f"{tag}: no rank wrote metrics")
    return report, ranks


def write_rank_data(args):
    """Data files of rank 0 (the digits) and rank 1 (their rows reversed)."""
    args.data = os.path.join(args.work, "digits")
    x = np.load(os.path.join(args.examples, "digits", "train_x.npy"))
    y = np.load(os.path.join(args.examples, "digits", "train_y.npy"))
    np.save(args.data + ".0.x.npy", x)
    np.save(args.data + ".0.y.npy", y)
    np.save(args.data + ".1.x.npy", np.ascontiguousarray(x[::-1]))
    np.save(args.data + ".1.y.npy", np.ascontiguousarray(y[::-1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    write_rank_data(args)
    for name, opt in (("adamw", ["--optimizer", "adamw", "--lr", "0.003"]),
                      ("sgd", ["--optimizer", "sgd", "--lr", "0.1",
                               "--momentum", "0.9"]),
                      ("adamw_bf16", ["--optimizer", "adamw", "--lr", "0.003",
                                      "--precision", "bf16"])):
        args.opt = opt
        _, whole = train(args, name + "_whole", [])
        report, sharded = train(args, name + "_zero2", ["--zero-shards", "2"])
        per, full = state_ratio(report)
        ratio = per / full
        print(f"{name}: optimizer state per rank {per} bytes, unsharded "
              f"{full} bytes: {ratio:.4f}")
        if abs(ratio - 0.5) > 0.005:
            sys.exit(f"{name}: per-rank state is {ratio:.4f} of the "
                     "unsharded, not 1/2 (+-1%)")
        if sorted(sharded) != sorted(whole):
            sys.exit(f"{name}: ranks {sorted(sharded)} wrote metrics with "
                     f"sharding, {sorted(whole)} without")
        for r, (ref_l, ref_p) in whole.items():
            losses, params = sharded[r]
            if len(ref_l) != STEPS:
                sys.exit(f"{name}: {len(ref_l)} losses, expected {STEPS}")
            np.testing.assert_allclose(losses, ref_l, rtol=1e-5, atol=1e-7,
                                       err_msg=f"{name}: rank {r}'s losses")
            for k, v in ref_p.items():
                np.testing.assert_allclose(
                    params[k], v, rtol=1e-5, atol=1e-7,
                    err_msg=f"{name}: rank {r}'s parameter {k}")
            print(f"{name}: rank {r}: {STEPS} steps, losses {ref_l[0]:.5f} "
                  f"-> {ref_l[-1]:.5f}, sharded = unsharded")
    print("ok")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Per-step CPU time of tcc artifacts at one thread, in interleaved rounds.

On a shared machine wall time measures the neighbours; one thread's CPU
time mostly does not. Each round runs `tcc bench ART --only compiled` with
--steps LO and --steps HI for every artifact in turn (alternating the
order) and takes (cpu(HI) - cpu(LO)) / (HI - LO), which removes loading and
warm-up. CPU time comes from os.times() (the kernel's clock ticks, 10 ms
at 100 Hz), so HI - LO should be 8 or more steps.

  benchmarks/cpu_cputime_ab.py --tcc build/tools/tcc/tcc --rounds 3 \\
      full.tcc trimmed.tcc
"""
import argparse
import os
import statistics
import subprocess
import sys


def cpu_seconds(tcc, art, steps, env):
    t0 = os.times()
    subprocess.run([tcc, "bench", art, "--only", "compiled", "--steps",
                    str(steps), "--warmup", "1"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    t1 = os.times()
    return (t1.children_user - t0.children_user) + (t1.children_system -
                                                    t0.children_system)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tcc", default="build/tools/tcc/tcc")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lo", type=int, default=2)
    ap.add_argument("--hi", type=int, default=10)
    ap.add_argument("artifacts", nargs="+")
    args = ap.parse_args()
    env = dict(os.environ, TCC_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1")
    res = {a: [] for a in args.artifacts}
    load = os.getloadavg()[0]
    for r in range(args.rounds):
        order = args.artifacts if r % 2 == 0 else args.artifacts[::-1]
        for a in order:
            ms = (cpu_seconds(args.tcc, a, args.hi, env) -
                  cpu_seconds(args.tcc, a, args.lo, env)) / (
                      args.hi - args.lo) * 1000
            res[a].append(ms)
            print(f"round {r + 1} {a}: {ms:.1f} ms CPU/step", file=sys.stderr)
    print(f"1 thread, CPU ms/step, median of {args.rounds} interleaved rounds; "
          f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    base = statistics.median(res[args.artifacts[0]])
    for a in args.artifacts:
        m = statistics.median(res[a])
        print(f"  {os.path.basename(a):<24}{m:8.1f}   {min(res[a]):.1f}.."
              f"{max(res[a]):.1f}   {base / m:.2f}x")


if __name__ == "__main__":
    main()

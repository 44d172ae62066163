#!/usr/bin/python3
"""benchmarks/scaling_model.py's arithmetic on cases worked by hand, and
docs/scaling.md's tables against what the script prints.

The model is the only evidence of multi-GPU scaling until a machine is
lent, so its formulas are checked here: the ring all-reduce time, NCCL's
latency model, DDP-style buckets, the serialised, overlapped timeline, and
GPT-2 small's parameter count; then the script's own output, so the
document cannot drift from it.
"""
import argparse
import importlib.util
import json
import subprocess
import sys

failures = []


def check(what, got, want, tol=1e-9):
    ok = (abs(got - want) <= tol * max(1.0, abs(want))
          if isinstance(want, float) else got == want)
    if not ok:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--doc", required=True)
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("scaling_model", args.script)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)

    # 2(N-1)/N * bytes / busbw + alpha: 1.5 * 1e8 B / 1e11 B/s = 1.5 ms.
    check("allreduce 100 MB, 4 ranks", m.allreduce_ms(100e6, 4, 100.0, 10.0),
          1.51)
    check("allreduce on one rank", m.allreduce_ms(100e6, 1, 100.0, 10.0), 0.0)
    # NCCL's ring model: 8.4 + 14 NVLink steps * 3.4; on 8 nodes 110 NVLink
    # steps * 3.4 + 16 network steps * 14.
    check("alpha 8", m.nccl_ring_alpha_us(8), 56.0)
    check("alpha 64", m.nccl_ring_alpha_us(64), 606.4)
    check("alpha 1", m.nccl_ring_alpha_us(1), 0.0)
    check("busbw 8", m.default_busbw(8), 370.0)
    check("busbw 64", m.default_busbw(64), 368.0)

    # Buckets of tensors of 1, 3, 20, 2, 2 MiB (float32).
    mib = [("a", 1, "b", 1.0), ("b", 3, "b", 1.0), ("c", 20, "b", 1.0),
           ("d", 2, "b", 1.0), ("e", 2, "b", 1.0)]
    t = [(n, k * m.MIB // 4, ph, f) for n, k, ph, f in mib]
    check("buckets cap 4", m.make_buckets(t, 4 * m.MIB),
          [(4 * m.MIB, 1), (20 * m.MIB, 2), (4 * m.MIB, 4)])
    check("buckets cap 5", m.make_buckets(t, 5 * m.MIB),
          [(24 * m.MIB, 2), (4 * m.MIB, 4)])

    # Forward 10 ms, backward 20, optimizer 2; two 100 MB gradients ready
    # halfway (t=20) and at the end (t=30), one bucket each.
    phases = {"forward": 10.0, "backward": 20.0, "optimizer": 2.0}
    two = [("A", 100_000_000, "backward", 0.5),
           ("B", 100_000_000, "backward", 1.0)]
    tiny = 1.0 / m.MIB
    r = m.simulate(phases, two, 4, tiny, 100.0, 10.0, elem_bytes=1)
    # A: 20 -> 21.51, B: 30 -> 31.51, exposed 1.51.
    check("fast: exposed", r["exposed_ms"], 1.51)
    check("fast: step", r["step_ms"], 33.51)
    check("fast: B starts when ready", r["buckets"][1]["start_ms"], 30.0)
    r = m.simulate(phases, two, 4, tiny, 10.0, 10.0, elem_bytes=1)
    # 15.01 ms each: A 20 -> 35.01, B waits for A: 35.01 -> 50.02.
    check("slow: B waits for A", r["buckets"][1]["start_ms"], 35.01)
    check("slow: exposed", r["exposed_ms"], 20.02)
    check("slow: step", r["step_ms"], 52.02)
    r = m.simulate(phases, two, 1, tiny, 10.0, 10.0, elem_bytes=1)
    check("one GPU: step", r["step_ms"], 32.0)
    r = m.simulate(phases, two, 4, tiny, 100.0, 10.0, elem_bytes=1,
                   contention=0.5)
    check("contention: half the hidden 1.51 ms", r["step_ms"], 34.265)

    # CharGPT at GPT-2 small's shape: "163.1M parameters" in the results.
    check("GPT-2 small parameters",
          sum(n for _, n, _, _ in m.gpt2_tensors()), 163_087_441)
    check("profile total (ms)", round(sum(m.PROFILE_MS.values()), 3), 122.56)

    out = subprocess.run([sys.executable, args.script, "--json"],
                         capture_output=True, text=True, check=True).stdout
    res = json.loads(out)
    one = res["weak"][0]
    check("N=1 efficiency", one["efficiency"], 1.0)
    check("N=1 tokens/s", one["tokens_per_s"], 64 * 1024 / 0.1232, 1e-6)
    eight = [r for r in res["weak"] if r["n"] == 8][0]
    if eight["efficiency"] < 0.9:
        failures.append(f"8 GPUs modelled at {eight['efficiency']:.3f} < 0.9")

    # Every table row the script prints appears verbatim in the document.
    table = ""
    for extra in ([], ["--timeline", "8"]):
        table += subprocess.run([sys.executable, args.script] + extra,
                                capture_output=True, text=True,
                                check=True).stdout
    doc = open(args.doc).read()
    rows = [l for l in table.splitlines() if l.startswith("| ")]
    if len(rows) < 20:
        failures.append(f"only {len(rows)} table rows printed")
    for row in rows:
        if row not in doc:
            failures.append(f"docs/scaling.md lacks the row: {row}")

    if failures:
        print("\n".join(failures))
        return 1
    print(f"scaling model: all checks passed ({len(rows)} table rows in "
          "the doc)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

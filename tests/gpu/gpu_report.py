#!/usr/bin/env python3
"""Helpers of tests/gpu/run.sh (Python 3, standard library only).

  gpu_report.py compare NAME CUDA.jsonl CPU.jsonl TOL OUT.json
      Compares two loss curves (tcc-run train --metrics) of the same run on
      the GPU and on the CPU. Passes when
        - both have the same steps,
        - step 1 agrees to TOL/4 relative (the same weights and batch: only
          the order of the sums differs),
        - every moving average of 10 steps agrees to TOL relative (later
          steps drift apart a little, as any two fp32 implementations do).
      Writes the figures to OUT.json; exit status 1 when it fails.

  gpu_report.py bench NAME BENCH.log OUT.json
      Collects the JSON lines of `tcc-run bench --json` from BENCH.log.

  gpu_report.py results OUTDIR
      Writes OUTDIR/results.md from OUTDIR/rows/*.json, OUTDIR/info.txt,
      OUTDIR/status.txt, OUTDIR/gpt2_small.md and OUTDIR/models.md (when
      present).
"""
import glob
import json
import os
import statistics
import sys


def rows(path):
    out = []
    with open(path) as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
    return out


def moving(v, w=10):
    if len(v) < w:
        return [sum(v) / len(v)] if v else []
    return [sum(v[i:i + w]) / w for i in range(len(v) - w + 1)]


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-6)


def compare(name, cuda_path, cpu_path, tol, out_path):
    tol = float(tol)
    g, c = rows(cuda_path), rows(cpu_path)
    res = {"kind": "curve", "name": name, "tol": tol, "ok": True,
           "problems": []}
    gs, cs = [r["step"] for r in g], [r["step"] for r in c]
    if not g or gs != cs:
        res["ok"] = False
        res["problems"].append(f"steps differ: cuda {len(g)}, cpu {len(c)}")
    else:
        gl, cl = [r["loss"] for r in g], [r["loss"] for r in c]
        res["steps"] = len(gl)
        res["first_rel"] = rel(gl[0], cl[0])
        res["window_rel"] = max(rel(a, b)
                                for a, b in zip(moving(gl), moving(cl)))
        res["final_cuda"], res["final_cpu"] = moving(gl)[-1], moving(cl)[-1]
        res["cuda_ms"] = statistics.median(r["step_ms"] for r in g)
        res["cpu_ms"] = statistics.median(r["step_ms"] for r in c)
        if res["first_rel"] > tol / 4:
            res["ok"] = False
            res["problems"].append(
                f"step 1: cuda {gl[0]:.6g}, cpu {cl[0]:.6g} "
                f"(relative {res['first_rel']:.2e} > {tol / 4:.2e})")
        if res["window_rel"] > tol:
            res["ok"] = False
            res["problems"].append(
                f"10-step averages differ by {res['window_rel']:.2e} "
                f"relative (> {tol:.2e})")
    with open(out_path, "w") as f:
        json.dump(res, f)
    verdict = "ok" if res["ok"] else "FAILED: " + "; ".join(res["problems"])
    print(f"{name}: loss curves cuda vs cpu: {verdict}")
    return 0 if res["ok"] else 1


def bench(name, log_path, out_path):
    lines = []
    with open(log_path) as f:
        for line in f:
            if line.startswith("{"):
                lines.append(json.loads(line))
    res = {"kind": "bench", "name": name, "modes": lines,
           "ok": bool(lines)}
    with open(out_path, "w") as f:
        json.dump(res, f)
    if not lines:
        print(f"{name}: tcc-run bench printed no JSON line", file=sys.stderr)
        return 1
    return 0


def mib(n):
    return f"{n / 2**20:.1f} MiB"


def results(outdir):
    def read(name):
        p = os.path.join(outdir, name)
        return open(p).read().strip() if os.path.exists(p) else ""

    all_rows = [json.load(open(p))
                for p in sorted(glob.glob(os.path.join(outdir, "rows",
                                                       "*.json")))]
    md = ["# tcc on the GPU: tests/gpu/run.sh", ""]
    status = read("status.txt") or "unknown (the script stopped early)"
    md += [f"Status: **{status}**", ""]
    info = read("info.txt")
    if info:
        md += ["```", info, "```", ""]
    unit = read("unit-summary.txt")
    if unit:
        md += ["## CUDA unit tests (`tcc_unit_tests --gtest_filter="
               "'Cuda*:Conformance/*cuda_*:DeviceSelect*'`)", "", "```", unit, "```", ""]
    curves = [r for r in all_rows if r["kind"] == "curve"]
    if curves:
        md += ["## Loss curves: cuda vs cpu (same artifact, data, seed)", "",
               "| artifact | steps | step-1 rel. diff | max 10-step avg "
               "rel. diff | final loss cuda / cpu | median step ms cuda / "
               "cpu | speedup | tolerance | result |",
               "|---|---|---|---|---|---|---|---|---|"]
        for r in curves:
            if "steps" not in r:
                md.append(f"| {r['name']} | | | | | | | {r['tol']} | FAILED: "
                          f"{'; '.join(r['problems'])} |")
                continue
            md.append(
                f"| {r['name']} | {r['steps']} | {r['first_rel']:.1e} | "
                f"{r['window_rel']:.1e} | {r['final_cuda']:.4f} / "
                f"{r['final_cpu']:.4f} | {r['cuda_ms']:.3f} / "
                f"{r['cpu_ms']:.3f} | {r['cpu_ms'] / r['cuda_ms']:.1f}x | "
                f"{r['tol']} | "
                f"{'ok' if r['ok'] else 'FAILED: ' + '; '.join(r['problems'])}"
                " |")
        md.append("")
    benches = [r for r in all_rows if r["kind"] == "bench"]
    if benches:
        md += ["## tcc-run bench --device cuda (synthetic data, median of "
               "the timed steps, CUDA events)", "",
               "| artifact | mode | batch | step ms | samples/s | tokens/s | "
               "peak device memory |", "|---|---|---|---|---|---|---|"]
        for r in benches:
            for m in r["modes"]:
                mode = m["mode"] + (" (TF32)" if m.get("tf32") else "")
                tps = (f"{m['tokens_per_sec']:,.0f}"
                       if m.get("tokens_per_sec") else "-")
                md.append(f"| {r['name']} | {mode} | {m['batch']} | "
                          f"{m['median_step_ms']:.3f} | "
                          f"{m['samples_per_sec']:,.1f} | {tps} | "
                          f"{mib(m['peak_bytes'])} |")
        md.append("")
    gpt2 = read("gpt2_small.md")
    if gpt2:
        md += ["## benchmarks/gpt2_small.py", "", gpt2, ""]
    models = read("models.md")
    if models:
        md += ["## benchmarks/gpu_models.py", "", models, ""]
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return 0


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "compare" and len(args) == 5:
        return compare(*args)
    if cmd == "bench" and len(args) == 3:
        return bench(*args)
    if cmd == "results" and len(args) == 1:
        return results(*args)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())

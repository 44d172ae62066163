#!/usr/bin/env python3
"""tcc against current PyTorch and ONNX Runtime Training on the CPU.

For each model (the MLP 784-1024-1024-10 at batch 256, the GPT example of
examples/make_gpt.py at d 128, T 64, batch 16, torchvision's ResNet-18 at
32x32, batch 32), side by side in one run, fp32, AdamW, pinned threads:

  tcc compiled            tcc compile, every pass (`tcc bench --only compiled`)
  tcc eager               no pass, op by op (`tcc bench --only eager`)
  PyTorch eager           AdamW(fused=True), and AdamW(foreach=True)
  torch.compile           model+loss and the optimizer step compiled, modes
                          default and max-autotune-no-cudagraphs
  ONNX Runtime Training   artifacts API (cross-entropy block, AdamW)

Every system starts from the same weights (the PyTorch model is exported
once, by the venv's PyTorch with torch.onnx.export(dynamo=False) unless
--exporter says otherwise: tcc and ORT train from that ONNX file, PyTorch
loads its state dict)
and the same batch; their first-step losses are printed and a relative
difference over 1e-4 is flagged. (`tcc bench`'s timed steps feed a
synthetic batch of the same shapes: fp32 step time does not depend on the
values.) Each system runs in its own process, for its own peak RSS: the
PyTorch and ORT ones are long-lived workers (cpu_workers.py), tcc is one
`tcc bench` per round. Rounds take the systems in turn (rotating who goes
first), each timing --steps steps; a system's figure is the median of its
round medians, and the spread of those is the noise.

  python3 benchmarks/cpu_vs_pytorch.py                 # all three models
  python3 benchmarks/cpu_vs_pytorch.py --models gpt --rounds 5
  python3 benchmarks/cpu_vs_pytorch.py --smoke         # 2 steps a system

Runs itself in the benchmark venv (benchmarks/venv.sh builds it on first
use: PyTorch 2.x, torchvision, onnx, onnxruntime-training), never with
Debian's PyTorch 1.13. Writes the report to --out.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# tcc compile flags of the eager baseline: what `tcc bench model.onnx`'s
# "eager (no passes, op by op)" variant turns off.
EAGER_FLAGS = ["--no-fuse", "--no-plan-memory", "--pad-multiple=0",
               "--fuse-attention=false", "--trim-conv-taps=false"]
STEPS = {"mlp": 10, "gpt": 10, "resnet": 4}
LOSS_RTOL = 1e-4


def in_venv():
    """Re-executes this script in the benchmark venv unless it runs there."""
    if os.environ.get("TCC_BENCH_IN_VENV") == "1":
        return
    py = subprocess.run([os.path.join(HERE, "venv.sh")], check=True,
                        stdout=subprocess.PIPE, text=True).stdout.strip()
    env = dict(os.environ, TCC_BENCH_IN_VENV="1")
    os.execve(py, [py, os.path.abspath(__file__)] + sys.argv[1:], env)


def thread_env(threads):
    return dict(os.environ, TCC_NUM_THREADS=str(threads),
                OPENBLAS_NUM_THREADS=str(threads),
                OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n"
                           f"{(p.stdout + p.stderr)[-3000:]}")
    return p.stdout


def mib(text):
    """'12.5 MiB' / '800.0 KiB' / '12 B' as MiB."""
    v, unit = text.split()
    return float(v) / {"MiB": 1, "KiB": 1024, "B": 1 << 20}[unit]


class Tcc:
    """tcc compiled or eager: an artifact, one `tcc bench --only MODE`
    process per round."""

    def __init__(self, args, d, meta, mode):
        self.args, self.mode, self.name = args, mode, f"tcc {mode}"
        self.art = os.path.join(d, f"{mode}.tcc")
        flags = ["--batch", str(meta["batch"]), "--loss", "cross_entropy",
                 "--optimizer", "adamw", "--lr", "1e-3"] + meta["tcc_flags"]
        if mode == "eager":
            flags += EAGER_FLAGS
        flags += args.tcc_flags.split()
        run([args.tcc, "compile", os.path.join(d, "model.onnx"), "-o",
             self.art] + flags)
        metrics = os.path.join(d, f"{mode}.jsonl")
        train = [args.tcc, "train", self.art, "--data",
                 "x=" + os.path.join(d, "x.npy"), "--data",
                 "labels=" + os.path.join(d, "labels.npy"), "--steps", "1",
                 "--no-shuffle", "--no-progress", "--metrics", metrics]
        if mode == "eager":
            train.append("--eager")
        run(train, thread_env(args.threads))
        with open(metrics) as f:
            self.loss0 = json.loads(f.readline())["loss"]
        self.version = "tcc " + git_commit()
        self.rss = self.tensor_peak = 0.0

    def round(self, steps):
        out = run([self.args.tcc, "bench", self.art, "--only", self.mode,
                   "--steps", str(steps), "--warmup", str(self.args.warmup)],
                  thread_env(self.args.threads))
        m = re.search(rf"^\s+{self.mode}\s+([0-9.]+)\s+[0-9.]+\s+"
                      r"(\S+ \S+)\s+(\S+ \S+)", out, re.M)
        self.tensor_peak = mib(m.group(3))
        r = re.search(r"process peak RSS: (\S+ \S+)", out)
        self.rss = max(self.rss, mib(r.group(1)))
        return [float(m.group(1)) / 1e3]  # the round's median

    def close(self):
        pass


class Worker:
    """A PyTorch or ORT system in a long-lived cpu_workers.py process."""

    def __init__(self, args, d, system):
        from cpu_workers import SYSTEMS
        self.name = SYSTEMS[system]
        self.log = os.path.join(d, f"{system}.log")
        self.p = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "cpu_workers.py"), system, d,
             "--threads", str(args.threads), "--warmup", str(args.warmup)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=open(self.log, "w"), text=True,
            env=thread_env(args.threads), cwd=d)
        self.rss, self.tensor_peak = 0.0, None

    def ready(self):
        """Waits for the worker's first step and warmup; returns self."""
        r = self.reply()
        if "error" in r:
            self.p.wait()
            raise RuntimeError(r["error"])
        self.loss0, self.version = r["loss0"], r["version"]
        self.startup_s = r["startup_s"]
        return self

    def reply(self):
        for line in self.p.stdout:
            if line.startswith("@@"):
                return json.loads(line[2:])
        self.p.wait()
        with open(self.log) as f:
            tail = f.read()[-3000:]
        raise RuntimeError(f"worker exited ({self.p.returncode}):\n{tail}")

    def round(self, steps):
        self.p.stdin.write(f"run {steps}\n")
        self.p.stdin.flush()
        return self.reply()["times"]

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            self.rss = self.reply()["vmhwm_mib"]
            self.p.wait()


_COMMIT = []


def git_commit():
    if not _COMMIT:
        p = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                           capture_output=True, text=True)
        _COMMIT.append(p.stdout.strip() or "unknown")
    return _COMMIT[0]


WORKERS = ("torch-fused", "torch-foreach", "compile-default",
           "compile-max-autotune", "ort")


def systems_name(key):
    from cpu_workers import SYSTEMS
    return SYSTEMS.get(key, key)


def why(e):
    """An exception's message on one line, its end (where the cause is)."""
    return " ".join(str(e).split())[-300:]


def bench_model(args, name, d, log):
    """Runs every system on one model; returns its report lines."""
    import cpu_models
    desc, batch = cpu_models.MODELS[name]
    meta = json.loads(run([args.exporter, os.path.join(HERE, "cpu_models.py"),
                           name, str(batch), d]).splitlines()[-1])
    systems, failed = [], []
    chosen = args.systems.split(",") if args.systems else None
    keys = [k for k in ("tcc-compiled", "tcc-eager") if not chosen or
            k in chosen]
    for key in keys:
        t0 = time.time()
        try:
            systems.append(Tcc(args, d, meta, key.split("-")[1]))
            log(f"  {systems[-1].name}: ready in {time.time() - t0:.0f} s")
        except Exception as e:
            failed.append((systems_name(key), why(e)))
            log(f"  {key}: FAILED: {failed[-1][1]}")
    # The workers build and compile at once (their start is not timed);
    # then each takes its first step and warmup before any round.
    t0 = time.time()
    workers = [(k, Worker(args, d, k)) for k in WORKERS
               if not chosen or k in chosen]
    for key, w in workers:
        try:
            systems.append(w.ready())
            log(f"  {w.name}: ready after {time.time() - t0:.0f} s")
        except Exception as e:
            failed.append((w.name, why(e)))
            log(f"  {key}: FAILED: {failed[-1][1]}")
    steps = args.steps or STEPS[name]
    rounds = {s.name: [] for s in systems}
    for r in range(args.rounds):
        k = r % max(len(systems), 1)
        for s in systems[k:] + systems[:k]:
            rounds[s.name].append(statistics.median(s.round(steps)))
        log(f"  round {r + 1}/{args.rounds} done")
    for s in systems:
        s.close()
    for n in rounds:
        log(f"  {n}: round medians ms " + ", ".join(
            f"{t * 1e3:.2f}" for t in rounds[n]))
    return report(args, name, desc, batch, meta, systems, failed, rounds,
                  steps)


def report(args, name, desc, batch, meta, systems, failed, rounds, steps):
    med = {s.name: statistics.median(rounds[s.name]) for s in systems}
    torch_rows = [s.name for s in systems
                  if s.name.startswith(("PyTorch", "torch.compile"))]
    best = min(torch_rows, key=lambda n: med[n]) if torch_rows else None
    ref = systems[0].loss0 if systems else 0.0
    lines = [f"### {desc}, batch {batch}", "",
             f"{meta['params'] / 1e6:.2f}M parameters; {args.rounds} rounds "
             f"x {steps} steps, median of the round medians; "
             f"{args.threads} threads.", "",
             "| system | ms/step | rounds min-max | best PyTorch / this "
             "| peak RSS | tensor peak | first-step loss |",
             "|---|---|---|---|---|---|---|"]
    mismatched = []
    for s in systems:
        rs = rounds[s.name]
        rel = abs(s.loss0 - ref) / max(abs(ref), 1e-12)
        flag = "" if rel <= LOSS_RTOL else " **MISMATCH**"
        if flag:
            mismatched.append(s.name)
        ratio = f"{med[best] / med[s.name]:.2f}x" if best else "n/a"
        tp = f"{s.tensor_peak:.1f} MiB" if s.tensor_peak else "n/a"
        lines.append(f"| {s.name} | {med[s.name] * 1e3:.2f} | "
                     f"{min(rs) * 1e3:.2f}-{max(rs) * 1e3:.2f} | {ratio} | "
                     f"{s.rss:.0f} MiB | {tp} | {s.loss0:.6f}{flag} |")
    for key, why in failed:
        lines.append(f"| {key} | failed: {why} | | | | | |")
    lines.append("")
    tcc = next((s.name for s in systems if s.name == "tcc compiled"), None)
    if best and tcc:
        lines.append(f"tcc compiled vs the best PyTorch ({best}): "
                     f"**{med[best] / med[tcc]:.2f}x**.")
    ort = next((s.name for s in systems if s.name.startswith("ONNX")), None)
    if ort and tcc:
        lines.append(f"tcc compiled vs ONNX Runtime Training: "
                     f"{med[ort] / med[tcc]:.2f}x.")
    spread = [(max(rounds[n]) - min(rounds[n])) / med[n] for n in med]
    if spread:
        lines.append(f"Noise: round medians spread {100 * min(spread):.0f}-"
                     f"{100 * max(spread):.0f}% of the median (max-min).")
    lines.append("First-step losses " + (
        "agree within 1e-4 relative." if not mismatched else
        "DIFFER (over 1e-4 relative) for: " + ", ".join(mismatched) + "."))
    versions = sorted({s.version for s in systems})
    lines.append("Versions: " + "; ".join(versions) + f"; ONNX exported by "
                 f"{meta['exporter']}.")
    if name == "mlp" and tcc and args.sgemm_gflops:
        s = meta_mlp_flops(batch)
        gf = s / med[tcc] / 1e9
        lines.append(f"tcc compiled's MLP step does {s / 1e9:.2f} GFLOP: "
                     f"{gf:.0f} GFLOP/s, {100 * gf / args.sgemm_gflops:.0f}% "
                     f"of the measured 2-thread sgemm peak "
                     f"({args.sgemm_gflops:.0f} GFLOP/s).")
    return lines + [""]


def meta_mlp_flops(batch):
    """The MLP step's matrix-product FLOPs: forward, the weight gradients
    and the input gradients of every layer but the first."""
    from cpu_models import MLP_SIZES as s
    mk = [s[i] * s[i + 1] for i in range(len(s) - 1)]
    return 2 * batch * (3 * sum(mk) - mk[0])


SGEMM_C = r"""
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
  int n = atoi(argv[1]), reps = atoi(argv[2]);
  float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
        *c = malloc(sizeof(float) * n * n);
  for (int i = 0; i < n * n; ++i) { a[i] = (i % 7) * 0.1f; b[i] = (i % 5) * 0.1f; }
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n,
                b, n, 0.0f, c, n);
    double dt = now() - t0;
    if (r > 0 && dt < best) best = dt;
  }
  printf("%f\n", 2.0 * n * n * n / best / 1e9);
  return 0;
}
"""


def tcc_blas_core(exe):
    """The OPENBLAS_CORETYPE tcc re-executes itself with where OpenBLAS does
    not recognise the CPU (runtime/cpu/BlasCore.cpp), so that the peak is
    that of the kernels tcc runs; None to leave OpenBLAS's choice. `exe`
    is a program linked with OpenBLAS, run to read the core it picks."""
    if "OPENBLAS_CORETYPE" in os.environ:
        return None
    probe = subprocess.run([exe, "64", "2"], capture_output=True, text=True,
                           env=dict(os.environ, OPENBLAS_VERBOSE="2"))
    if "Core: Prescott" not in probe.stdout + probe.stderr:
        return None
    with open("/proc/cpuinfo") as f:
        m = re.search(r"^flags\s*:(.*)$", f.read(), re.M)
    flags = set(m.group(1).split()) if m else set()
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "SkylakeX"
    return "Haswell" if {"avx2", "fma"} <= flags else None


def sgemm_peak(threads, log):
    """The best sgemm rate of Debian's OpenBLAS (the library tcc calls) on
    `threads` threads at 1024 and 2048, in GFLOP/s; 0 if it cannot build."""
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "sgemm.c"), os.path.join(d, "sgemm")
        with open(src, "w") as f:
            f.write(SGEMM_C)
        try:
            run(["cc", "-O2", src, "-o", exe, "-I/usr/include/x86_64-linux-gnu",
                 "-lopenblas"])
            env = thread_env(threads)
            core = tcc_blas_core(exe)
            if core:
                env["OPENBLAS_CORETYPE"] = core
            rates = [float(run([exe, str(n), "12"], env))
                     for n in (1024, 1024, 2048)]
        except Exception as e:
            log(f"sgemm peak: not measured ({str(e).splitlines()[0]})")
            return 0.0
    return max(rates)


def machine():
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        info = f.read()
    m = re.search(r"^model name\s*:\s*(.*)$", info, re.M)
    if m:
        cpu = m.group(1).strip()
    avx = "AVX-512" if "avx512f" in info else "AVX2" if "avx2" in info else ""
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {avx}, {mem:.0f} GiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", default="mlp,gpt,resnet")
    ap.add_argument("--systems", default="",
                    help="comma list of tcc-compiled, tcc-eager, torch-fused, "
                    "torch-foreach, compile-default, compile-max-autotune, "
                    "ort (default all)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=0,
                    help="timed steps per system per round (default: mlp "
                    "10, gpt 10, resnet 4)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tcc", default=os.path.join(ROOT, "build/tools/tcc/tcc"))
    ap.add_argument("--tcc-flags", default="", help="extra tcc compile flags")
    ap.add_argument("--exporter", default="",
                    help="the Python whose PyTorch exports the ONNX model "
                    "(default: this venv's, the current PyTorch a user "
                    "exports with; /usr/bin/python3 gives Debian's PyTorch "
                    "1.13, the exporter of tcc's examples and tests)")
    ap.add_argument("--out", default=os.path.join(
        HERE, "results", f"cpu_vs_pytorch_{datetime.date.today()}.md"))
    ap.add_argument("--smoke", action="store_true",
                    help="2 rounds of 2 steps, 1 warmup: checks the script")
    args = ap.parse_args()
    in_venv()
    from importlib.metadata import version
    torch_version = version("torch")
    if int(torch_version.split(".")[0]) < 2:
        sys.exit(f"cpu_vs_pytorch.py: PyTorch {torch_version} is not 2.x")
    if args.smoke:
        args.rounds, args.steps, args.warmup = 2, 2, 1
    args.tcc = os.path.abspath(args.tcc)
    if not args.exporter:
        args.exporter = sys.executable

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    load0 = os.getloadavg()
    args.sgemm_gflops = sgemm_peak(args.threads, log)
    log(f"sgemm peak (OpenBLAS, {args.threads} threads): "
        f"{args.sgemm_gflops:.0f} GFLOP/s")
    body = []
    write = not args.smoke or args.out != ap.get_default("out")
    for name in args.models.split(","):
        log(f"== {name}")
        with tempfile.TemporaryDirectory(prefix=f"tcc-cpu-{name}-") as d:
            lines = bench_model(args, name, d, log)
        print("\n".join(lines), flush=True)
        body += lines
        if write:  # after every model, so a later failure keeps the rest
            text = "\n".join(header(args, torch_version, load0) + body)
            os.makedirs(os.path.dirname(os.path.abspath(args.out)),
                        exist_ok=True)
            with open(args.out, "w") as f:
                f.write(text)
            log(f"wrote {args.out}")


def header(args, torch_version, load0):
    load1 = os.getloadavg()
    busy = []
    if max(load0[0], load1[0]) > 1.5 * os.cpu_count():
        busy = [f"**The machine was oversubscribed** (load average up to "
                f"{max(load0[0], load1[0]):.0f} on {os.cpu_count()} cores): "
                "every time is inflated, and likely unevenly: threads that "
                "spin-wait long at barriers (GNU OpenMP's default, under "
                "PyTorch and inductor's kernels) lose more to a descheduled "
                "partner than tcc's pool, which spins briefly and then "
                "sleeps. Rerun on a quiet machine for the ratios.", ""]
    return [f"# tcc vs PyTorch {torch_version} and ONNX Runtime Training "
            f"on the CPU ({datetime.date.today()})", "",
            f"Machine: {machine()}; load average {load0[0]:.1f} before, "
            f"{load1[0]:.1f} after (other processes share the cores, so "
            "compare the rows of one table, measured in interleaved "
            "rounds, rather than absolute times).",
            f"tcc {git_commit()}; fp32, AdamW (lr 1e-3, betas 0.9/0.999, "
            f"eps 1e-8, weight decay 0.01), {args.threads} threads on every "
            "side (TCC_NUM_THREADS, torch.set_num_threads, ORT "
            "intra_op_num_threads).",
            f"sgemm peak, Debian's OpenBLAS on {args.threads} threads, "
            f"n 1024/2048: {args.sgemm_gflops:.0f} GFLOP/s.",
            "Peak RSS: each system alone in its process (VmHWM). Tensor "
            "peak: tcc's measured arena and allocations; PyTorch and ORT "
            "report none.", ""] + busy + [
            "Command: `python3 benchmarks/cpu_vs_pytorch.py "
            + " ".join(sys.argv[1:]) + "`", ""]

if __name__ == "__main__":
    main()

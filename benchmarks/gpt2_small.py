#!/usr/bin/python3
"""GPT-2-small training throughput: tcc vs PyTorch eager vs torch.compile.

The model is examples/make_gpt.py's CharGPT at GPT-2-small's shape: 12
pre-norm transformer layers, d 768, 12 heads, T 1024, GELU's tanh
approximation (GPT-2's activation), vocabulary 50257
(tcc pads the head's GEMM as its padding pass decides for the target),
AdamW, bf16 mixed precision. Reported per system: the largest batch that
fits, tokens/s (median over timed steps), MFU and peak GPU memory.
The PyTorch rows train the same CharGPT with autocast, AdamW(fused=True) on
the GPU, and nn.MultiheadAttention, whose causal mask PyTorch 2 recognises
and hands to scaled_dot_product_attention as is_causal (flash attention).
The "PyTorch best practice" rows (gpt2_torch.py) train GPT-2 as nanoGPT
writes it: fused QKV Linear, scaled_dot_product_attention(is_causal=True),
tanh GELU, tied embedding and head, vocabulary padded to 50304, fused
AdamW, bf16 autocast; eager, torch.compile and torch.compile max-autotune
(compiled rows on a GPU, or with --compile-on-cpu).

Two halves, because the GPU machine has no MLIR (it runs artifacts only):

  # 1. On the development machine: export the ONNX model and compile one
  #    artifact per candidate batch (seeded weights: each is a few MiB).
  /usr/bin/python3 benchmarks/gpt2_small.py prepare --out /tmp/gpt2s \\
      --tcc build/tools/tcc/tcc --batches 64,32,16

  # 2. On the GPU machine (PyTorch with CUDA, the runtime-only tcc-run):
  python3 benchmarks/gpt2_small.py run --artifacts /tmp/gpt2s \\
      --tcc-run OUT/build/tools/tcc-run/tcc-run --out OUT

`--preset tiny` (d 64, 2 layers, T 64, vocab 512) runs both halves on a
CPU in a minute, to check the script itself (`run --device cpu`).
`run --tcc-variant NAME=RUNNER` (repeatable) adds a row 'tcc, NAME' for
another tcc-run executable, such as a wrapper that sets an opt-in kernel's
environment setting (tests/gpu/prepare.sh --variant), and its ratio to tcc.

MFU = model FLOPs per second / the GPU's dense bf16 peak, with model FLOPs
per token = 6 * N + 12 * layers * d * T (PaLM's formula: the backward's
2x, attention's QK^T and AV over all T keys, no recomputation counted), N
the parameters of the model's matrix products: every parameter but the
token embedding (a lookup, not a product: this model's head is a separate
matrix) and the positional one (an add). Counting those too would add 6 x
39.4M FLOPs per token, 27% more, that no kernel computes.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_torch  # noqa: E402

# GELU's tanh approximation is GPT-2's own activation ("gelu_new"), and the
# one cuBLASLt epilogues compute: tcc folds it into the MLP's GEMMs.
PRESETS = {
    "gpt2-small": dict(vocab=50257, d=768, heads=12, layers=12, t=1024,
                       gelu="tanh"),
    "tiny": dict(vocab=512, d=64, heads=4, layers=2, t=64, gelu="tanh"),
}

# Dense bf16 tensor-core peaks (FLOP/s), by device name.
PEAKS = [("H200", 989.4e12), ("H100 PCIe", 756.0e12), ("H100", 989.4e12),
         ("A100", 312.0e12)]
# Memory bandwidth (bytes/s), by device name: the profile's roofline.
BANDWIDTHS = [("H200", 4.8e12), ("H100 PCIe", 2.0e12), ("H100", 3.35e12),
              ("A100", 2.0e12)]


def by_device(table, name):
    return next((v for key, v in table if key in name), None)


def model_flops_per_token(cfg, flop_params):
    return 6 * flop_params + 12 * cfg["layers"] * cfg["d"] * cfg["t"]


def flop_params_of(model):
    """The parameters that take part in matrix products (see MFU above)."""
    return sum(p.numel() for name, p in model.named_parameters()
               if name not in ("tok.weight", "pos"))


def build_model(cfg):
    from make_gpt import CharGPT
    return CharGPT(vocab=cfg["vocab"], d=cfg["d"], heads=cfg["heads"],
                   layers=cfg["layers"], t=cfg["t"],
                   gelu=cfg.get("gelu", "erf"))


def prepare(args):
    import torch
    cfg = PRESETS[args.preset]
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    model = build_model(cfg)
    model.train()
    onnx_path = os.path.join(args.out, "model.onnx")
    if not os.path.exists(onnx_path):
        x = torch.randint(0, cfg["vocab"], (2, cfg["t"]))
        t0 = time.time()
        torch.onnx.export(model, x, onnx_path, input_names=["x"],
                          output_names=["logits"],
                          dynamic_axes={"x": {0: "batch"},
                                        "logits": {0: "batch"}},
                          opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        print(f"exported {onnx_path} in {time.time() - t0:.1f} s")
    params = sum(p.numel() for p in model.parameters())
    flop_params = flop_params_of(model)
    artifacts = {}
    for b in [int(s) for s in args.batches.split(",")]:
        art = os.path.join(args.out, f"b{b}.tcc")
        cmd = [args.tcc, "compile", onnx_path, "-o", art, "--batch", str(b),
               "--loss", "cross_entropy", "--optimizer", "adamw",
               "--freeze", "mask", "--precision", args.precision,
               "--weights", "seeded", "--target", args.target]
        if args.target == "cuda":
            cmd += ["--gpu-arch", args.gpu_arch]
        t0 = time.time()
        subprocess.run(cmd, check=True)
        print(f"compiled {art} ({os.path.getsize(art) / 2**20:.1f} MiB) in "
              f"{time.time() - t0:.1f} s")
        artifacts[b] = os.path.basename(art)
    # The ONNX file (500 MB at full size) is not needed on the GPU machine.
    if args.drop_onnx:
        os.remove(onnx_path)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump({"preset": args.preset, "config": cfg, "params": params,
                   "flop_params": flop_params,
                   "precision": args.precision, "target": args.target,
                   "artifacts": artifacts}, f, indent=1)


def has_sdpa():
    import torch
    return hasattr(torch.nn.functional, "scaled_dot_product_attention")


def run_worker(cmd):
    """A worker process's JSON line, or None and the end of its output."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stdout + p.stderr)[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), ""


def run_torch(args, mode, batch):
    return run_worker([sys.executable, __file__, "torch-worker", "--preset",
                       args.preset, "--mode", mode, "--batch", str(batch),
                       "--device", args.device, "--precision", args.precision,
                       "--steps", str(args.steps), "--warmup",
                       str(args.warmup)])


def run_tcc(args, art, device, attention=None, runner=None):
    """tcc-run bench; `attention` sets TCC_CUDA_ATTENTION (tiled/chunked),
    `runner` replaces args.tcc_run (a --tcc-variant's)."""
    cmd = [runner or args.tcc_run, "bench", art, "--steps", str(args.steps),
           "--device", device, "--only", "compiled", "--json"]
    env = dict(os.environ)
    if attention:
        env["TCC_CUDA_ATTENTION"] = attention
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return None, (p.stdout + p.stderr)[-2000:]
    lines = [l for l in p.stdout.splitlines()
             if l.startswith("{") and "median_step_ms" in l]
    if not lines:
        return None, "tcc-run bench printed no JSON line:\n" + p.stdout
    r = json.loads(lines[-1])
    return {"step_s": r["median_step_ms"] / 1e3,
            "peak_bytes": r.get("peak_bytes", 0),
            "device": r.get("device", device),
            "cuda_graphs": r.get("cuda_graphs", "")}, ""


# Kernel families of the profile summary, by kernel name prefix.
FAMILIES = [("GEMMs", ("matmul",)),
            ("attention", ("attention",)),
            ("generated fused kernels", ("fused:",)),
            ("optimizer", ("adamw_update", "sgd_")),
            ("layer norm parameter gradients", ("layer_norm_param_grad",))]


# The problem shape `tcc-run bench --profile-shapes` adds to a GEMM's or
# attention's name (runtime/core/KernelCost.h, profileShape).
SHAPE = re.compile(r" (\[[0-9x]+\] k[0-9]+|b[0-9]+ t[0-9]+x[0-9]+ d[0-9]+"
                   r"( dv[0-9]+)?( causal)?)$")


def kernel_name(name):
    """A profile entry's kernel, without its problem shape."""
    return SHAPE.sub("", name)


def by_kernel(entries):
    """Profile entries summed per kernel name (shapes folded), slowest
    first."""
    merged = {}
    for k in entries:
        m = merged.setdefault(kernel_name(k["kernel"]),
                              {"kernel": kernel_name(k["kernel"]), "calls": 0,
                               "seconds": 0.0, "bytes": 0, "flops": 0.0})
        for key in ("calls", "seconds", "bytes", "flops"):
            m[key] += k[key]
    return sorted(merged.values(), key=lambda k: -k["seconds"])


def profile_tcc(args, art, log, peak, bandwidth):
    """`tcc-run bench --profile-shapes` of one artifact: markdown lines for
    the report (families, the slowest kernels, then the GEMM and attention
    problems by shape), or [] when it fails. With the device's `peak`
    FLOP/s and memory `bandwidth`, each family also gets its roofline time,
    max(bytes / bandwidth, FLOPs / peak) summed over its kernels, and how
    far above it the family runs: the gap ranks what is worth optimising;
    the shapes table says which of a family's problems make the gap."""
    cmd = [args.tcc_run, "bench", art, "--steps", "3", "--warmup", "1",
           "--device", args.device, "--only", "compiled", "--profile-shapes",
           "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in p.stdout.splitlines()
             if l.startswith("{") and '"profile"' in l]
    if p.returncode != 0 or not lines:
        log.write("tcc profile failed:\n" + (p.stdout + p.stderr)[-2000:])
        return []
    prof = json.loads(lines[-1])
    with open(os.path.join(args.out, "gpt2_small_profile.json"), "w") as f:
        json.dump(prof, f, indent=1)
    steps = prof["profile_steps"]
    shaped = prof["profile"]
    kernels = by_kernel(shaped)
    total = sum(k["seconds"] for k in kernels) or 1.0

    def rates(sec, byt, flo):
        gbs = f"{byt / sec / 1e9:,.1f}" if sec > 0 and byt else ""
        tfs = f"{flo / sec / 1e12:,.1f}" if sec > 0 and flo else ""
        return gbs, tfs

    how = ("each kernel between its own CUDA events, no CUDA graph"
           if args.device == "cuda" else "each kernel by the host clock")

    def bound_of(k):
        return max(k["bytes"] / bandwidth, k["flops"] / peak)

    def roofline(fam):
        if not (peak and bandwidth):
            return "", ""
        bound = sum(bound_of(k) for k in fam)
        sec = sum(k["seconds"] for k in fam)
        return (f"{bound * 1e3 / steps:.2f}",
                f"{(sec - bound) * 1e3 / steps:.2f}")

    out = ["", f"## Where tcc's step goes ({steps} steps, {how})", "",
           "| kernels | calls/step | ms/step | share | GB/s | TFLOP/s "
           "| roofline ms | above it ms |",
           "|---|---|---|---|---|---|---|---|"]
    rest = list(kernels)
    groups = []
    for name, prefixes in FAMILIES:
        fam = [k for k in rest if k["kernel"].startswith(prefixes)]
        rest = [k for k in rest if not k["kernel"].startswith(prefixes)]
        if fam:
            groups.append((name, fam))
    if rest:
        groups.append(("other", rest))
    for name, fam in groups:
        sec = sum(k["seconds"] for k in fam)
        gbs, tfs = rates(sec, sum(k["bytes"] for k in fam),
                         sum(k["flops"] for k in fam))
        calls = sum(k["calls"] for k in fam) / steps
        bound, above = roofline(fam)
        out.append(f"| {name} | {calls:.0f} | {sec * 1e3 / steps:.2f} "
                   f"| {100 * sec / total:.1f}% | {gbs} | {tfs} "
                   f"| {bound} | {above} |")
    if peak and bandwidth:
        bound, above = roofline(kernels)
        out.append(f"| all | | {total * 1e3 / steps:.2f} | 100% | | "
                   f"| {bound} | {above} |")
        out.append("")
        out.append(f"Roofline: {bandwidth / 1e12:g} TB/s and "
                   f"{peak / 1e12:g} TFLOP/s; bytes are each operand "
                   "once (runtime/core/KernelCost.h).")

    def shown(name):
        return name if len(name) <= 60 else name[:57] + "..."

    out += ["", "Slowest kernels:", "",
            "| kernel | calls/step | ms/step | share | GB/s | TFLOP/s |",
            "|---|---|---|---|---|---|"]
    for k in kernels[:15]:
        gbs, tfs = rates(k["seconds"], k["bytes"], k["flops"])
        out.append(f"| {shown(k['kernel'])} | {k['calls'] / steps:.0f} "
                   f"| {k['seconds'] * 1e3 / steps:.3f} "
                   f"| {100 * k['seconds'] / total:.1f}% | {gbs} | {tfs} |")
    problems = [k for k in shaped if k["kernel"] != kernel_name(k["kernel"])]
    if problems:
        if peak and bandwidth:
            problems.sort(key=lambda k: -(k["seconds"] - bound_of(k)))
            order = "most time above the roofline first"
        else:
            problems.sort(key=lambda k: -k["seconds"])
            order = "slowest first"
        out += ["", f"GEMMs and attention by problem ({order}; a GEMM as "
                "its product [.., M, N] and K):", "",
                "| problem | calls/step | ms/call | ms/step | TFLOP/s "
                "| above roofline ms/step |", "|---|---|---|---|---|---|"]
        for k in problems[:20]:
            _, tfs = rates(k["seconds"], k["bytes"], k["flops"])
            above = (f"{(k['seconds'] - bound_of(k)) * 1e3 / steps:.3f}"
                     if peak and bandwidth else "")
            out.append(f"| {shown(k['kernel'])} | {k['calls'] / steps:.0f} "
                       f"| {k['seconds'] * 1e3 / k['calls']:.3f} "
                       f"| {k['seconds'] * 1e3 / steps:.3f} | {tfs} "
                       f"| {above} |")
    return out


def tcc_variant(text):
    """--tcc-variant's NAME=RUNNER: (NAME, RUNNER), RUNNER an executable."""
    name, sep, runner = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z0-9_-]+", name) or not runner:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not NAME=RUNNER (NAME letters, digits, _ or -)")
    if not (os.path.isfile(runner) and os.access(runner, os.X_OK)):
        raise argparse.ArgumentTypeError(
            f"{name}: runner '{runner}' is not an executable file")
    return name, runner


def largest_fitting(batches, measure, log, what):
    """Tries batches from the largest down; the first that runs wins."""
    for b in sorted(batches, reverse=True):
        r, err = measure(b)
        if r is not None:
            return b, r
        log.write(f"{what} batch {b}: failed\n{err}\n")
        log.flush()
    return None, None


def read_config(artifacts, script=__file__):
    """ARTIFACTS/config.json as `script prepare` wrote it; exits 1 naming
    what is wrong when it is missing or not JSON."""
    name = os.path.basename(script)
    path = os.path.join(artifacts, "config.json")
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        sys.exit(f"{name}: no {path}: make ARTIFACTS with `{name} prepare "
                 f"--out {artifacts}` first")
    except (OSError, ValueError) as e:
        sys.exit(f"{name}: {path}: {e}")


def run(args):
    conf = read_config(args.artifacts)
    args.preset = conf["preset"]
    args.precision = conf["precision"]
    cfg = conf["config"]
    arts = {int(b): os.path.join(args.artifacts, a)
            for b, a in conf["artifacts"].items()}
    batches = sorted(arts)
    if args.torch_batches:
        torch_batches = [int(s) for s in args.torch_batches.split(",")]
    else:
        torch_batches = batches
    os.makedirs(args.out, exist_ok=True)
    log = open(os.path.join(args.out, "gpt2_small.log"), "w")
    if "flop_params" not in conf:  # prepared by an older version
        torch_model = build_model(cfg)
        conf["flop_params"] = flop_params_of(torch_model)
        del torch_model
    fpt = model_flops_per_token(cfg, conf["flop_params"])
    rows = []
    systems = [("PyTorch eager", lambda b: run_torch(args, "eager", b),
                torch_batches)]
    compile_rows = (args.device == "cuda" or args.compile_on_cpu) and \
        not args.no_compile
    if compile_rows:
        systems.append(("torch.compile",
                        lambda b: run_torch(args, "compile", b),
                        torch_batches))
    # PyTorch's best practice (gpt2_torch.py): the model as nanoGPT writes
    # it, where this PyTorch has scaled_dot_product_attention (2.0+).
    if not args.no_best_practice and has_sdpa():
        best = [("eager", "nanogpt-eager")]
        if compile_rows:
            best += [("torch.compile", "nanogpt-compile"),
                     ("torch.compile max-autotune", "nanogpt-max-autotune")]
        for label, mode in best:
            systems.append((f"PyTorch best practice, {label}",
                            lambda b, mode=mode: run_torch(args, mode, b),
                            torch_batches))
    systems.append(("tcc", lambda b: run_tcc(args, arts[b], args.device),
                    batches))
    if args.device == "cuda":
        # The same artifact with attention's chunk loop instead of the tiled
        # kernels: what keeping the scores on the chip is worth.
        systems.append(("tcc, chunked attention",
                        lambda b: run_tcc(args, arts[b], args.device,
                                          "chunked"), batches))
    # Other runners of the same artifacts (tests/gpu/prepare.sh --variant
    # wraps tcc-run under a setting): opt-in kernels measured beside the
    # defaults in the same run, each at the largest batch it fits.
    for name, runner in args.tcc_variant:
        systems.append((f"tcc, {name}",
                        lambda b, runner=runner: run_tcc(
                            args, arts[b], args.device, runner=runner),
                        batches))
    device_name = args.device
    for name, measure, bs in systems:
        b, r = largest_fitting(bs, measure, log, name)
        if r is None:
            rows.append((name, None, None))
            continue
        device_name = r.get("device", device_name)
        r["runs_s"] = [r["step_s"]]
        rows.append((name, b, r))
    # tcc's row and its variants' again, --repeats runs each in all, in
    # rounds that take each in turn (a drift of clocks or temperature then
    # falls on all alike); each row's step is the median of its runs. Runs
    # of one build differed by ~1.3% on an H100 (2026-11-27), more than the
    # margin of the MFU target, so one run does not settle it.
    measures = {name: measure for name, measure, _ in systems}
    repeated = {"tcc"} | {f"tcc, {name}" for name, _ in args.tcc_variant}
    for _ in range(max(args.repeats, 1) - 1):
        for name, b, r in rows:
            if r is None or name not in repeated:
                continue
            again, err = measures[name](b)
            if again is None:
                log.write(f"{name} batch {b}: a repeat failed\n{err}\n")
                log.flush()
                continue
            r["runs_s"].append(again["step_s"])
    for name, b, r in rows:
        if r is not None:
            r["step_s"] = statistics.median(r["runs_s"])
    peak = args.peak_tflops * 1e12 if args.peak_tflops else \
        by_device(PEAKS, device_name)
    out = [f"# GPT-2-small-shaped training ({args.preset}: "
           f"{conf['params'] / 1e6:.1f}M parameters, T {cfg['t']}, "
           f"{args.precision}, AdamW) on {device_name}", "",
           f"MFU counts {fpt / 1e9:.3f} GFLOP per token: 6 x "
           f"{conf['flop_params'] / 1e6:.1f}M parameters in matrix products "
           f"+ 12 x {cfg['layers']} layers x d {cfg['d']} x T {cfg['t']}, "
           f"against a peak of "
           + (f"{peak / 1e12:.0f} TFLOP/s." if peak else "(unknown)."), "",
           "| system | batch | step ms | tokens/s | MFU | peak memory |",
           "|---|---|---|---|---|---|"]
    base = {}
    for name, b, r in rows:
        if r is None:
            out.append(f"| {name} | none fits | | | | |")
            continue
        tps = b * cfg["t"] / r["step_s"]
        base[name] = tps
        mfu = f"{100 * tps * fpt / peak:.1f}%" if peak else "n/a"
        mem = f"{r['peak_bytes'] / 2**30:.2f} GiB" if r["peak_bytes"] else "n/a"
        out.append(f"| {name} | {b} | {r['step_s'] * 1e3:.1f} | {tps:,.0f} "
                   f"| {mfu} | {mem} |")
    for name, b, r in rows:
        if r is not None and len(r["runs_s"]) > 1:
            runs = ", ".join(f"{t * 1e3:.1f}" for t in r["runs_s"])
            out.append(f"\n{name}: step ms the median of {len(r['runs_s'])} "
                       f"runs in rounds: {runs}")
    for name, b, r in rows:
        if r is not None and r.get("torch"):
            out.append(f"\n{name}: PyTorch {r['torch']}, AdamW "
                       f"{r.get('adamw', 'default')}, autocast "
                       f"{args.precision}")
        if r is not None and r.get("cuda_graphs"):
            out.append(f"\n{name} CUDA graphs: {r['cuda_graphs']}")
    if "tcc" in base:
        for ref in ("PyTorch eager", "torch.compile",
                    "PyTorch best practice, eager",
                    "PyTorch best practice, torch.compile",
                    "PyTorch best practice, torch.compile max-autotune"):
            if ref in base:
                out.append(f"\ntcc / {ref}: {base['tcc'] / base[ref]:.2f}x "
                           "tokens/s")
        for name, _ in args.tcc_variant:
            if f"tcc, {name}" in base:
                out.append(f"\ntcc, {name} / tcc: "
                           f"{base[f'tcc, {name}'] / base['tcc']:.2f}x "
                           "tokens/s")
    tcc_row = next((r for r in rows if r[0] == "tcc" and r[2]), None)
    if tcc_row and not args.no_profile:
        bandwidth = args.bandwidth_tbs * 1e12 if args.bandwidth_tbs else \
            by_device(BANDWIDTHS, device_name)
        out += profile_tcc(args, arts[tcc_row[1]], log, peak, bandwidth)
    text = "\n".join(out) + "\n"
    with open(os.path.join(args.out, "gpt2_small.md"), "w") as f:
        f.write(text)
    print(text)
    # A variant that runs at no batch is in its row and the log; the
    # systems measured by default decide the status.
    variants = {f"tcc, {name}" for name, _ in args.tcc_variant}
    return 0 if all(r is not None for name, _, r in rows
                    if name not in variants) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="export + compile (dev machine)")
    p.add_argument("--out", required=True)
    p.add_argument("--tcc", default="build/tools/tcc/tcc")
    p.add_argument("--preset", choices=PRESETS, default="gpt2-small")
    p.add_argument("--batches", default="64,32,16")
    p.add_argument("--precision", default="bf16")
    p.add_argument("--target", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--gpu-arch", default="sm_90a")
    p.add_argument("--drop-onnx", action="store_true")
    r = sub.add_parser("run", help="measure (GPU machine)")
    r.add_argument("--artifacts", required=True)
    r.add_argument("--tcc-run", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    r.add_argument("--steps", type=int, default=20)
    r.add_argument("--warmup", type=int, default=5)
    r.add_argument("--repeats", type=int, default=3,
                   help="runs of each tcc row, in rounds; its step is their "
                   "median (PyTorch's rows run once)")
    r.add_argument("--torch-batches", default="",
                   help="batches to try for PyTorch (default: the artifacts')")
    r.add_argument("--no-compile", action="store_true",
                   help="skip torch.compile")
    r.add_argument("--compile-on-cpu", action="store_true",
                   help="with --device cpu, also run the torch.compile rows "
                   "(slow; checks them at --preset tiny)")
    r.add_argument("--no-best-practice", action="store_true",
                   help="skip the 'PyTorch best practice' rows (nanoGPT's "
                   "model, gpt2_torch.py)")
    r.add_argument("--peak-tflops", type=float, default=0,
                   help="the device's dense bf16 peak (default: by name)")
    r.add_argument("--bandwidth-tbs", type=float, default=0,
                   help="its memory bandwidth in TB/s, for the profile's "
                   "roofline (default: by name)")
    r.add_argument("--no-profile", action="store_true",
                   help="skip the per-kernel profile of tcc's step")
    r.add_argument("--tcc-variant", action="append", default=[],
                   type=tcc_variant, metavar="NAME=RUNNER",
                   help="also measure the artifacts with the tcc-run "
                   "executable RUNNER, as the row 'tcc, NAME' "
                   "(repeatable; e.g. a tests/gpu/prepare.sh --variant)")
    w = sub.add_parser("torch-worker")
    w.add_argument("--preset", choices=PRESETS, required=True)
    w.add_argument("--mode", choices=gpt2_torch.MODES, required=True)
    w.add_argument("--batch", type=int, required=True)
    w.add_argument("--device", default="cuda")
    w.add_argument("--precision", default="bf16")
    w.add_argument("--steps", type=int, default=20)
    w.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    if args.cmd == "prepare":
        prepare(args)
    elif args.cmd == "run":
        sys.exit(run(args))
    else:
        gpt2_torch.torch_worker(args, PRESETS[args.preset], build_model)


if __name__ == "__main__":
    main()

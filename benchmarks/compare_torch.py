#!/usr/bin/python3
"""tcc compiled vs tcc eager vs PyTorch eager: one model, batch and optimizer.

Builds a torch.nn model (an MLP, the GPT-style char model of
examples/make_gpt.py, or torchvision's ResNet-18), exports it with
torch.onnx.export in training mode, and measures, side by side:

1. `tcc bench model.onnx`: in one process, the model compiled with every
   optimization pass, with each pass turned off in turn, and with none (the
   eager baseline, op by op with a buffer per result); their steps interleave.
2. The process peak RSS of tcc compiled and tcc eager, each alone in its
   own process (`tcc bench ART --only ...`).
3. PyTorch eager training the same model on random data of the same shapes
   with the same optimizer (AdamW), in its own process for a clean RSS.

  /usr/bin/python3 benchmarks/compare_torch.py --model mlp --batch 256
  /usr/bin/python3 benchmarks/compare_torch.py --model gpt --batch 16
  /usr/bin/python3 benchmarks/compare_torch.py --model resnet --batch 32

Uses Debian's python3-torch (PyTorch 1.13, CPU). Thread counts are pinned on
both sides (TCC_NUM_THREADS for tcc, torch.set_num_threads).
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from make_gpt import CharGPT  # noqa: E402
from make_mlp import make_mlp  # noqa: E402

# Compile flags that turn every optimization pass off: the eager baseline.
NO_PASSES = ["--no-fuse", "--no-plan-memory", "--pad-multiple=0"]


def build(args):
    """The model, an example input, its classes, and compile flags."""
    if args.model == "gpt":
        model = CharGPT(t=args.seq)
        return model, torch.randint(0, 256, (2, args.seq)), 256, ["--freeze", "mask"]
    if args.model == "resnet":
        import torchvision
        return torchvision.models.resnet18(num_classes=10), \
            torch.randn(2, 3, 32, 32), 10, []
    sizes = [int(s) for s in args.sizes.split(",")]
    return make_mlp(sizes), torch.randn(2, sizes[0]), sizes[-1], []


def random_batch(args, example):
    shape = (args.batch,) + tuple(example.shape[1:])
    if example.dtype == torch.int64:
        return torch.randint(0, 256, shape)
    return torch.rand(shape) * 2 - 1


def torch_steps(model, x, classes, steps, warmup, lr):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    crit = nn.CrossEntropyLoss()
    model.train()
    with torch.no_grad():
        y = torch.randint(0, classes, model(x).shape[:-1])
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = crit(model(x).reshape(-1, classes), y.reshape(-1))
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if i >= warmup:
            times.append(dt)
    return statistics.median(times)


def peak_rss_mib():
    """This process's own peak RSS (VmHWM). ru_maxrss would include the
    parent's peak at fork, which Linux carries across exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def describe(args):
    if args.model == "gpt":
        return f"GPT-style T={args.seq}"
    if args.model == "resnet":
        return "ResNet-18 (10 classes), 32x32"
    return f"MLP {args.sizes}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tcc", default="build/tools/tcc/tcc")
    ap.add_argument("--model", choices=["mlp", "gpt", "resnet"], default="mlp")
    ap.add_argument("--sizes", default="784,1024,1024,10", help="MLP widths")
    ap.add_argument("--seq", type=int, default=64, help="GPT sequence length")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--tcc-flags", default="",
                    help="extra tcc compile flags, e.g. '--precision=bf16'")
    ap.add_argument("--torch-only", action="store_true",
                    help=argparse.SUPPRESS)  # child process for a clean RSS
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model, example, classes, flags = build(args)
    flags += args.tcc_flags.split()

    if args.torch_only:
        ms = torch_steps(model, random_batch(args, example), classes, args.steps,
                         args.warmup, args.lr) * 1e3
        print(f"torch {ms:.3f} {peak_rss_mib():.1f}")
        return

    env = dict(os.environ, TCC_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads))
    common = ["--batch", str(args.batch), "--optimizer", "adamw", "--lr",
              str(args.lr)] + flags
    timing = ["--steps", str(args.steps), "--warmup", str(args.warmup)]
    rss = {}
    with tempfile.TemporaryDirectory() as d:
        onnx_path = os.path.join(d, "model.onnx")
        torch.onnx.export(model, example, onnx_path,
                          input_names=["x"], output_names=["logits"],
                          dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}},
                          opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        table = subprocess.run([args.tcc, "bench", onnx_path] + common + timing,
                               check=True, capture_output=True, text=True,
                               env=env).stdout
        print(table, end="")
        for mode, extra in (("compiled", []), ("eager", NO_PASSES)):
            art = os.path.join(d, f"{mode}.tcc")
            subprocess.run([args.tcc, "compile", onnx_path, "-o", art] + common
                           + extra, check=True)
            out = subprocess.run([args.tcc, "bench", art, "--only", mode] + timing,
                                 check=True, capture_output=True, text=True,
                                 env=env).stdout
            m = re.search(r"process peak RSS: ([0-9.]+) (MiB|KiB)", out)
            rss[mode] = float(m.group(1)) / (1024 if m.group(2) == "KiB" else 1)
    eager = float(re.search(r"^\s+eager \(.*?\)\s+([0-9.]+)", table, re.M).group(1))
    compiled = float(re.search(r"^\s+compiled \(.*?\)\s+([0-9.]+)", table,
                               re.M).group(1))
    child = subprocess.run([sys.executable, __file__, "--torch-only",
                            "--model", args.model, "--seq", str(args.seq),
                            "--sizes", args.sizes, "--batch", str(args.batch),
                            "--steps", str(args.steps), "--warmup",
                            str(args.warmup), "--threads", str(args.threads),
                            "--lr", str(args.lr)],
                           check=True, capture_output=True, text=True).stdout
    _, torch_ms, torch_rss = child.split()
    torch_ms, rss["torch"] = float(torch_ms), float(torch_rss)
    print(f"\n{describe(args)}, batch {args.batch}, AdamW, "
          f"{' '.join(flags) or 'fp32'}, {args.threads} threads, "
          f"median of {args.steps} steps")
    print(f"  {'system':<16}{'step ms':>10}{'vs PyTorch':>12}{'peak RSS':>14}")
    for name, ms, key in (("tcc compiled", compiled, "compiled"),
                          ("tcc eager", eager, "eager"),
                          ("PyTorch eager", torch_ms, "torch")):
        print(f"  {name:<16}{ms:>10.3f}{torch_ms / ms:>11.2f}x"
              f"{rss[key]:>10.1f} MiB")


if __name__ == "__main__":
    main()

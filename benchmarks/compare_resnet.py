#!/usr/bin/python3
"""tcc compiled vs tcc eager vs PyTorch eager on torchvision's ResNet-18.

resnet18(num_classes=10) on 32x32 inputs is exported in training mode
(batch norm with batch statistics), compiled by tcc with AdamW, and timed
with `tcc bench` (eager and compiled side by side in one process); the same
model then trains in PyTorch on random data of the same shapes with the same
optimizer. Prints the median step times and their ratios.

  /usr/bin/python3 benchmarks/compare_resnet.py --tcc build/tools/tcc/tcc \
      --batch 32 --threads 2

Uses Debian's python3-torch and python3-torchvision (PyTorch 1.13, CPU).
Thread counts are pinned for both sides (TCC_NUM_THREADS for tcc's OpenBLAS,
torch.set_num_threads).
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
import torchvision


def torch_steps(model, batch, steps, warmup, lr):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    crit = nn.CrossEntropyLoss()
    x = torch.rand(batch, 3, 32, 32) * 2 - 1
    y = torch.randint(0, 10, (batch,))
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if i >= warmup:
            times.append(dt)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tcc", default="build/tools/tcc/tcc")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--torch-only", action="store_true",
                    help=argparse.SUPPRESS)  # child process for a clean RSS
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    model.train()

    if args.torch_only:
        ms = torch_steps(model, args.batch, args.steps, args.warmup,
                         args.lr) * 1e3
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"torch {ms:.3f} {rss:.1f}")
        return

    with tempfile.TemporaryDirectory() as d:
        onnx_path = os.path.join(d, "resnet18.onnx")
        torch.onnx.export(model, torch.randn(args.batch, 3, 32, 32), onnx_path,
                          input_names=["x"], output_names=["logits"],
                          opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        art = os.path.join(d, "resnet18.tcc")
        subprocess.run([args.tcc, "compile", onnx_path, "-o", art, "--batch",
                        str(args.batch), "--optimizer", "adamw", "--lr",
                        str(args.lr)], check=True)
        env = dict(os.environ, TCC_NUM_THREADS=str(args.threads),
                   OPENBLAS_NUM_THREADS=str(args.threads))
        out = subprocess.run([args.tcc, "bench", art, "--steps", str(args.steps),
                              "--warmup", str(args.warmup)], check=True,
                             capture_output=True, text=True, env=env).stdout
    print(out, end="")
    eager = float(re.search(r"^\s+eager\s+([0-9.]+)", out, re.M).group(1))
    compiled = float(re.search(r"^\s+compiled\s+([0-9.]+)", out, re.M).group(1))
    child = subprocess.run([sys.executable, __file__, "--torch-only",
                            "--batch", str(args.batch), "--steps",
                            str(args.steps), "--warmup", str(args.warmup),
                            "--threads", str(args.threads), "--lr",
                            str(args.lr)],
                           check=True, capture_output=True, text=True).stdout
    _, torch_ms, torch_rss = child.split()
    torch_ms = float(torch_ms)
    print(f"\nResNet-18 (10 classes), 32x32, batch {args.batch}, AdamW, fp32, "
          f"{args.threads} threads, median of {args.steps} steps")
    print(f"  {'system':<16}{'step ms':>10}{'vs PyTorch':>12}")
    for name, ms in (("tcc compiled", compiled), ("tcc eager", eager),
                     ("PyTorch eager", torch_ms)):
        print(f"  {name:<16}{ms:>10.3f}{torch_ms / ms:>11.2f}x")
    print(f"  PyTorch process peak RSS: {float(torch_rss):.1f} MiB")


if __name__ == "__main__":
    main()

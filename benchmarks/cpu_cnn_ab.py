#!/usr/bin/python3
"""A/B of the CPU's convolution paths on one artifact, in interleaved rounds.

Runs `tcc bench ART --only compiled` once per variant per round, the
variants in turn (so machine load drifts over all of them alike), and prints
each variant's median step time and per-kernel times over the rounds, with
the ratio to the first variant. A variant is a name and environment
settings, e.g. the loops (TCC_CPU_CONV=im2col) against oneDNN:

  benchmarks/cpu_cnn_ab.py --tcc build/tools/tcc/tcc --artifact r18.tcc \\
      --variant im2col:TCC_CPU_CONV=im2col --variant onednn:TCC_CPU_CONV=onednn

The setting ARTIFACT=PATH runs that variant on another artifact (two
compilations of one model, e.g. with and without --trim-conv-taps=false):

  benchmarks/cpu_cnn_ab.py --variant full:ARTIFACT=full.tcc \\
      --variant trimmed:ARTIFACT=trimmed.tcc

ResNet-18 as benchmarks/compare_torch.py exports it: --export-resnet OUT.onnx
writes it (torchvision's resnet18, 10 classes, 32x32, opset 17, training).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys


def export_resnet(path):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    torch.onnx.export(model, torch.randn(2, 3, 32, 32), path,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}},
                      opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)


def bench(args, env, artifact):
    out = subprocess.run([args.tcc, "bench", artifact, "--only",
                          "compiled", "--steps", str(args.steps), "--warmup",
                          str(args.warmup), "--profile"],
                         check=True, capture_output=True, text=True,
                         env=env).stdout
    step = float(re.search(r"^\s+compiled\s+([0-9.]+)", out, re.M).group(1))
    kernels = {}
    for m in re.finditer(r"^  (\S+)\s+([0-9.]+)\s+([0-9.]+)\s+[0-9.]+%", out,
                         re.M):
        kernels[m.group(1)] = float(m.group(3))
    m = re.search(r"^  \(all kernels\)\s+[0-9.]+\s+([0-9.]+)", out, re.M)
    if m:
        kernels["(all kernels)"] = float(m.group(1))
    return step, kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tcc", default="build/tools/tcc/tcc")
    ap.add_argument("--artifact")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:VAR=VALUE[,VAR=VALUE...]")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kernels", default="conv2d,conv2d_grad_input,"
                    "conv2d_grad_weight,batch_norm_train,batch_norm_train_grad,"
                    "max_pool2d,max_pool2d_grad,(all kernels)")
    ap.add_argument("--export-resnet", metavar="OUT")
    args = ap.parse_args()
    if args.export_resnet:
        export_resnet(args.export_resnet)
        return
    if not args.variant:
        sys.exit("at least one --variant is needed")
    variants = []
    for v in args.variant:
        name, _, settings = v.partition(":")
        env = dict(os.environ, TCC_NUM_THREADS=str(args.threads),
                   OPENBLAS_NUM_THREADS=str(args.threads))
        artifact = args.artifact
        for kv in filter(None, settings.split(",")):
            k, _, val = kv.partition("=")
            if k == "ARTIFACT":
                artifact = val
            else:
                env[k] = val
        if not artifact:
            sys.exit(f"variant {name}: no --artifact and no ARTIFACT=PATH")
        variants.append((name, env, artifact))
    steps = {n: [] for n, _, _ in variants}
    kernels = {n: {} for n, _, _ in variants}
    load_before = os.getloadavg()[0]
    for r in range(args.rounds):
        for name, env, artifact in variants:
            s, ks = bench(args, env, artifact)
            steps[name].append(s)
            for k, ms in ks.items():
                kernels[name].setdefault(k, []).append(ms)
            print(f"round {r + 1} {name}: {s:.1f} ms", file=sys.stderr)
    base = variants[0][0]
    base_ms = statistics.median(steps[base])
    print(f"median of {args.rounds} interleaved rounds x {args.steps} steps, "
          f"{args.threads} threads; load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after")
    print(f"  {'variant':<14}{'step ms':>10}{'vs ' + base:>14}   min..max")
    for name, _, _ in variants:
        ms = statistics.median(steps[name])
        print(f"  {name:<14}{ms:>10.1f}{base_ms / ms:>13.2f}x   "
              f"{min(steps[name]):.1f}..{max(steps[name]):.1f}")
    print("  ms/step by kernel (medians):")
    names = args.kernels.split(",")
    print("  " + f"{'kernel':<24}" + "".join(f"{n:>12}" for n, _, _ in variants))
    for k in names:
        row = [statistics.median(kernels[n][k]) if k in kernels[n] else 0.0
               for n, _, _ in variants]
        print("  " + f"{k:<24}" + "".join(f"{v:>12.2f}" for v in row))


if __name__ == "__main__":
    main()

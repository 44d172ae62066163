#!/usr/bin/python3
"""The CPU's training results, bit for bit, against a recording.

Trains the three example models on the CPU -- the bundled digits MLP
(compiled, eager, and with --grad-accum 2), the GPT-style char model of
examples/make_gpt.py (fp32 and bf16) and torchvision's ResNet-18 at 32x32 --
and compares every step's loss and every exported tensor with
tests/e2e/golden/cpu_bits.json, bit for bit. The recording was made with
the code before the runtime was split into backends (issue 32): a
refactoring of the runtime must leave these bits as they were. It was
recorded again when the learning rate became a runtime f32 tensor (issue
34): AdamW's lr/bc1 is now computed from f32(lr), which moves the AdamW
runs' bits (the SGD run's stayed the same). And again when the generated
kernels' erf became one rational function (issue 35, runtime/core/prelude/
FastMath.h; error 3e-7 as before, but other roundings): that moves the fp32
GPT run's exported tensors (its GELU; its six losses kept their bits), and
nothing else. The generated code is built for the host's widest ISA
(x86-64-v4 here, recorded at v3 before): the same bits, as the unchanged
cases show (TCC_HOST_ISA=x86-64-v3 gives this recording too).
And when the CPU attention's
products moved to AVX-512 tiles (issue 35): the GPT runs' bits moved (fp32
losses unchanged as recorded, bf16 losses within 3e-5), the others stayed.
And the ResNet case
when the CPU's convolutions moved to oneDNN (issue 35). And both GPT cases
when cut cross-entropy fused their head and loss (issue 35: the head's
product in vocabulary blocks and a running log-sum-exp, so other
roundings; the bf16 losses moved by under 4e-4, the fp32 losses not).
Recorded again on an Intel Xeon (Sapphire Rapids class, where OpenBLAS
falls back to Prescott and the tools run its SkylakeX kernels) when GEMMs
were split over the runtime's thread pool (each block one OpenBLAS call:
other kernels and roundings) and ResNet's padding-only conv taps were
trimmed (issue 35); on the AMD EPYC of the previous recording it now skips.
And again when those blocks moved to oneDNN's sgemm (issue 35): the MLP and
ResNet cases' last bits moved, the GPT cases' did not. Under
TCC_CPU_CONV=im2col (the sanitizer run), which never loads oneDNN, the test
skips: its convolutions and GEMMs round otherwise.

Bits depend on the machine: OpenBLAS picks its kernels by CPU, and the
generated code targets the host's ISA. The recording names the machine it
was made on (the CPU model, its vector ISAs, the OpenBLAS core); on another
kind the test skips (exit 77, which ctest reports as skipped) and says why.
The models' starting weights are checked first, so that a different
PyTorch export reads as that and not as a tcc change.

  tests/e2e/cpu_bits.py --tcc build/tools/tcc/tcc --examples examples --work /tmp/bits [--record]
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch

SKIP = 77
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden",
                      "cpu_bits.json")


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n"
                 f"{p.stdout}\n{p.stderr}")
    return p.stdout


def tensor_hashes(path):
    """SHA-256 of each float initializer's bytes, by name."""
    out = {}
    for t in onnx.load(path).graph.initializer:
        a = onnx.numpy_helper.to_array(t)
        if a.dtype.kind == "f":
            out[t.name] = hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
    return out


def export_gpt(path, examples):
    sys.path.insert(0, examples)
    from make_gpt import CharGPT
    torch.manual_seed(0)
    model = CharGPT(t=32)
    model.train()
    torch.onnx.export(model, torch.randint(0, 256, (2, 32)), path,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)


def export_resnet(path, work):
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    torch.onnx.export(model, torch.randn(2, 3, 32, 32), path,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 32).astype(np.int64)
    np.save(os.path.join(work, "resnet_x.npy"), x)
    np.save(os.path.join(work, "resnet_y.npy"), y)


def cases(args):
    """(name, source model, compile flags, train flags)."""
    ex = args.examples
    digits = ["--data", f"x={ex}/digits/train_x.npy",
              "--data", f"labels={ex}/digits/train_y.npy"]
    mlp = ["--batch", "32", "--loss", "cross_entropy", "--optimizer", "adamw",
           "--lr", "0.003"]
    tokens = ["--tokens", f"{ex}/text/licenses.txt"]
    gpt = ["--batch", "8", "--loss", "cross_entropy", "--optimizer", "adamw",
           "--freeze", "mask"]
    w = args.work
    resnet_data = ["--data", f"x={w}/resnet_x.npy", "--data", f"labels={w}/resnet_y.npy"]
    return [
        ("mlp", f"{ex}/mlp.onnx", mlp, digits + ["--steps", "30"]),
        ("mlp_eager", f"{ex}/mlp.onnx", mlp, digits + ["--steps", "30", "--eager"]),
        ("mlp_accum", f"{ex}/mlp.onnx", mlp + ["--grad-accum", "2"],
         digits + ["--steps", "10"]),
        ("mlp_sgd", f"{ex}/mlp.onnx",
         ["--batch", "32", "--loss", "cross_entropy", "--optimizer", "sgd",
          "--lr", "0.05", "--momentum", "0.9"], digits + ["--steps", "20"]),
        ("gpt", f"{w}/gpt.onnx", gpt, tokens + ["--steps", "6"]),
        ("gpt_bf16", f"{w}/gpt.onnx", gpt + ["--precision", "bf16"],
         tokens + ["--steps", "6"]),
        ("resnet18", f"{w}/resnet18.onnx",
         ["--batch", "8", "--loss", "cross_entropy", "--optimizer", "adamw"],
         resnet_data + ["--steps", "3", "--no-shuffle"]),
    ]


def machine(args):
    """What the bits depend on: the CPU (its model and the vector ISAs the
    generated code and OpenBLAS may use) and the OpenBLAS core it picks."""
    import ctypes
    import re
    with open("/proc/cpuinfo") as f:
        info = f.read()
    model = re.search(r"model name\s*:\s*(.*)", info)
    flags = re.search(r"flags\s*:\s*(.*)", info)
    isas = [f for f in (flags.group(1).split() if flags else [])
            if f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl")]
    try:
        blas = ctypes.CDLL("libopenblas.so.0")
        blas.openblas_get_corename.restype = ctypes.c_char_p
        core = blas.openblas_get_corename().decode()
    except OSError:
        core = "unknown"
    return {"cpu": model.group(1).strip() if model else "unknown",
            "isa": sorted(isas), "openblas_core": core}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--record", action="store_true",
                    help="write the recording instead of comparing with it")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    env = dict(os.environ, TCC_NUM_THREADS="2")

    # The recording's convolutions and GEMMs are oneDNN's; the im2col path
    # (the sanitizer run's, setup.sh), which never loads oneDNN, rounds both
    # otherwise.
    if os.environ.get("TCC_CPU_CONV") == "im2col":
        if args.record:
            sys.exit("cpu_bits: record with oneDNN's kernels (unset "
                     "TCC_CPU_CONV)")
        print("SKIP: TCC_CPU_CONV=im2col (recorded with oneDNN's "
              "convolutions and GEMMs)")
        return SKIP

    facts = machine(args)
    golden = None
    if not args.record:
        with open(GOLDEN) as f:
            golden = json.load(f)
        if golden["machine"] != facts:
            print(f"SKIP: recorded on {golden['machine']}, this machine is {facts}")
            return SKIP

    export_gpt(os.path.join(args.work, "gpt.onnx"), args.examples)
    export_resnet(os.path.join(args.work, "resnet18.onnx"), args.work)
    results = {}
    failures = []
    for name, model, cflags, tflags in cases(args):
        art = os.path.join(args.work, name + ".tcc")
        metrics = os.path.join(args.work, name + ".jsonl")
        trained = os.path.join(args.work, name + ".trained.onnx")
        for p in (metrics, trained):
            if os.path.exists(p):
                os.remove(p)
        run([args.tcc, "compile", model, "-o", art] + cflags, env)
        run([args.tcc, "train", art, "--seed", "1", "--no-progress",
             "--metrics", metrics, "--export", trained] + tflags, env)
        with open(metrics) as f:
            losses = [json.loads(line)["loss"] for line in f]
        got = {"initial": tensor_hashes(model), "losses": losses,
               "trained": tensor_hashes(trained)}
        results[name] = got
        if golden is None:
            continue
        want = golden["cases"][name]
        if got["initial"] != want["initial"]:
            failures.append(f"{name}: the exported model's starting weights "
                            "differ from the recording's (a different PyTorch "
                            "or export), so its training cannot be compared")
            continue
        if got["losses"] != want["losses"]:
            failures.append(f"{name}: losses {got['losses']} != recorded "
                            f"{want['losses']}")
        bad = [k for k in want["trained"] if got["trained"].get(k) != want["trained"][k]]
        if bad or set(got["trained"]) != set(want["trained"]):
            failures.append(f"{name}: exported tensors differ: {bad[:6]}"
                            f"{' ...' if len(bad) > 6 else ''}")
        print(f"{name}: {len(losses)} losses, {len(got['trained'])} tensors "
              f"{'differ' if bad or got['losses'] != want['losses'] else 'identical'}")

    if args.record:
        os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
        tmp = GOLDEN + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"machine": facts, "cases": results}, f, indent=1,
                      sort_keys=True)
            f.write("\n")
        os.replace(tmp, GOLDEN)
        print(f"recorded {len(results)} cases in {GOLDEN}")
        return 0
    if failures:
        print("\n".join(failures))
        return 1
    print(f"all {len(results)} cases bit-identical to the recording")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The other issues' models on a GPU: tcc vs PyTorch eager vs torch.compile.

The MLP (examples/make_mlp.py's, at 784-1024-1024-10), the GPT-style
character model (examples/make_gpt.py's CharGPT: 2 pre-norm layers, d 128,
4 heads, T 64, 256 byte tokens) and ResNet-50 (examples/make_cnn.py's, 224x224,
1000 classes, fp32: tcc's convolutions are cuDNN's, and PyTorch's are run
without TF32 as tcc's are) trained with AdamW and cross-entropy, each at one
batch, side by side: step time (median over timed steps),
samples/s (tokens/s for the GPT), peak GPU memory, and tcc's ratios to
PyTorch. benchmarks/gpt2_small.py does the same for the GPT-2-small-shaped
model, with MFU and a profile.

Two halves, because the GPU machine has no MLIR (it runs artifacts only):

  # 1. On the development machine: export each model and compile it
  #    (seeded weights, --target cuda). tests/gpu/prepare.sh does this
  #    into ARTIFACT_DIR/models.
  /usr/bin/python3 benchmarks/gpu_models.py prepare --out /tmp/models \\
      --tcc build/tools/tcc/tcc

  # 2. On the GPU machine (PyTorch with CUDA, the runtime-only tcc-run);
  #    tests/gpu/run.sh --parts models runs this.
  python3 benchmarks/gpu_models.py run --artifacts /tmp/models \\
      --tcc-run OUT/build/tools/tcc-run/tcc-run --out OUT

`prepare --target cpu --batch 4` and `run --device cpu --no-compile` check
the script on a CPU in seconds. The report is OUT/models.md.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)
# The workers' timing, the runners and the artifacts' config, as the GPT-2
# benchmark measures them.
from gpt2_small import read_config, run_tcc, run_worker  # noqa: E402
from gpt2_torch import time_steps  # noqa: E402

# Each model as the other issues train it, at a batch that gives a GPU
# enough work to measure (a step of the MLP at the examples' batch 32 is a
# few microseconds of kernels: launch overhead alone).
MODELS = {
    "mlp": dict(kind="mlp", sizes=[784, 1024, 1024, 10], batch=1024,
                precision="fp32"),
    "char-gpt": dict(kind="gpt", vocab=256, d=128, heads=4, layers=2, t=64,
                     gelu="erf", batch=256, precision="bf16"),
    "resnet50": dict(kind="cnn", image=224, classes=1000, batch=64,
                     precision="fp32"),
}


def build(cfg):
    if cfg["kind"] == "mlp":
        from make_mlp import make_mlp
        return make_mlp(cfg["sizes"])
    if cfg["kind"] == "cnn":
        from make_cnn import ResNet50
        return ResNet50(cfg["classes"])
    from make_gpt import CharGPT
    return CharGPT(vocab=cfg["vocab"], d=cfg["d"], heads=cfg["heads"],
                   layers=cfg["layers"], t=cfg["t"], gelu=cfg["gelu"])


def example_input(cfg, batch, device="cpu"):
    """The model input x and the cross-entropy labels y."""
    import torch
    if cfg["kind"] == "mlp":
        return (torch.randn(batch, cfg["sizes"][0], device=device),
                torch.randint(0, cfg["sizes"][-1], (batch,), device=device))
    if cfg["kind"] == "cnn":
        size = cfg["image"]
        return (torch.randn(batch, 3, size, size, device=device),
                torch.randint(0, cfg["classes"], (batch,), device=device))
    shape = (batch, cfg["t"])
    return (torch.randint(0, cfg["vocab"], shape, device=device),
            torch.randint(0, cfg["vocab"], shape, device=device))


def samples_per_step(cfg, batch):
    """Tokens for the GPT (a sample is T of them), rows for the MLP."""
    return batch * cfg["t"] if cfg["kind"] == "gpt" else batch


def prepare(args):
    import torch
    os.makedirs(args.out, exist_ok=True)
    conf = {"target": args.target, "models": {}}
    for name in args.models.split(",") if args.models else MODELS:
        cfg = MODELS[name]
        batch = args.batch or cfg["batch"]
        torch.manual_seed(0)
        model = build(cfg)
        model.train()
        onnx_path = os.path.join(args.out, f"{name}.onnx")
        x, _ = example_input(cfg, 2)
        torch.onnx.export(model, x, onnx_path, input_names=["x"],
                          output_names=["logits"],
                          dynamic_axes={"x": {0: "batch"},
                                        "logits": {0: "batch"}},
                          opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        art = os.path.join(args.out, f"{name}.tcc")
        cmd = [args.tcc, "compile", onnx_path, "-o", art, "--batch",
               str(batch), "--loss", "cross_entropy", "--optimizer", "adamw",
               "--precision", cfg["precision"], "--weights", "seeded",
               "--target", args.target]
        if cfg["kind"] == "gpt":
            cmd += ["--freeze", "mask"]
        if args.target == "cuda":
            cmd += ["--gpu-arch", args.gpu_arch]
        t0 = time.time()
        subprocess.run(cmd, check=True)
        os.remove(onnx_path)
        print(f"compiled {art} in {time.time() - t0:.1f} s")
        conf["models"][name] = {
            "config": cfg, "batch": batch, "artifact": f"{name}.tcc",
            "params": sum(p.numel() for p in model.parameters())}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(conf, f, indent=1)


def torch_worker(args):
    """One PyTorch measurement in this process; prints one JSON line."""
    import torch
    cfg = MODELS[args.model]
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    torch.manual_seed(0)
    model = build(cfg).to(dev)
    model.train()
    # PyTorch's fastest AdamW on a GPU (one fused kernel), as in
    # gpt2_small.py; the CPU keeps the default.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01,
                            **({"fused": True} if cuda else {}))
    step_fn = torch.compile(model) if args.mode == "compile" else model
    lossf = torch.nn.CrossEntropyLoss()
    x, y = example_input(cfg, args.batch, dev)
    classes = (cfg["sizes"][-1] if cfg["kind"] == "mlp" else
               cfg["classes"] if cfg["kind"] == "cnn" else cfg["vocab"])
    if cfg["precision"] == "fp32":
        # tcc runs fp32 GEMMs and convolutions without TF32 unless asked;
        # PyTorch's cuDNN convolutions allow it by default.
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    amp = cfg["precision"] == "bf16"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            out = step_fn(x)
        loss = lossf(out.float().reshape(-1, classes), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    print(json.dumps(time_steps(step, args.warmup, args.steps, cuda)))


def run_torch(args, name, mode, batch):
    return run_worker([sys.executable, os.path.abspath(__file__),
                       "torch-worker", "--model", name, "--mode", mode,
                       "--batch", str(batch), "--device", args.device,
                       "--steps", str(args.steps), "--warmup",
                       str(args.warmup)])


def run(args):
    conf = read_config(args.artifacts, __file__)
    os.makedirs(args.out, exist_ok=True)
    log = open(os.path.join(args.out, "gpu_models.log"), "w")
    out, failed, device_name = [], False, args.device
    for name, m in conf["models"].items():
        cfg, batch = m["config"], m["batch"]
        art = os.path.join(args.artifacts, m["artifact"])
        systems = [("PyTorch eager",
                    lambda: run_torch(args, name, "eager", batch))]
        if args.device == "cuda" and not args.no_compile:
            systems.append(("torch.compile",
                            lambda: run_torch(args, name, "compile", batch)))
        systems.append(("tcc", lambda: run_tcc(args, art, args.device)))
        unit = "tokens/s" if cfg["kind"] == "gpt" else "samples/s"
        shape = ("-".join(str(s) for s in cfg["sizes"]) if cfg["kind"] == "mlp"
                 else f"{cfg['image']}x{cfg['image']}, {cfg['classes']} "
                 "classes" if cfg["kind"] == "cnn"
                 else f"{cfg['layers']} layers, d {cfg['d']}, T {cfg['t']}")
        out += [f"## {name} ({shape}, {m['params'] / 1e6:.2f}M parameters, "
                f"{cfg['precision']}, AdamW), batch {batch}", "",
                f"| system | step ms | {unit} | peak memory |",
                "|---|---|---|---|"]
        rate = {}
        for system, measure in systems:
            r, err = measure()
            if r is None:
                failed = True
                log.write(f"{name} {system}: failed\n{err}\n")
                log.flush()
                out.append(f"| {system} | failed (gpu_models.log) | | |")
                continue
            device_name = r.get("device", device_name)
            rate[system] = samples_per_step(cfg, batch) / r["step_s"]
            mem = (f"{r['peak_bytes'] / 2**20:.1f} MiB" if r["peak_bytes"]
                   else "n/a")
            out.append(f"| {system} | {r['step_s'] * 1e3:.3f} | "
                       f"{rate[system]:,.0f} | {mem} |")
        for ref in ("PyTorch eager", "torch.compile"):
            if "tcc" in rate and ref in rate:
                out.append(f"\ntcc / {ref}: {rate['tcc'] / rate[ref]:.2f}x "
                           f"{unit}")
        out.append("")
    text = (f"# The MLP, the GPT-style model and ResNet-50 on {device_name}\n\n"
            + "\n".join(out))
    with open(os.path.join(args.out, "models.md"), "w") as f:
        f.write(text)
    print(text)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="export + compile (dev machine)")
    p.add_argument("--out", required=True)
    p.add_argument("--tcc", default="build/tools/tcc/tcc")
    p.add_argument("--target", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--gpu-arch", default="sm_90a")
    p.add_argument("--batch", type=int, default=0,
                   help="one batch for every model (default: each its own)")
    p.add_argument("--models", default="",
                   help="comma-separated models to prepare (default: all: "
                   + ",".join(MODELS) + ")")
    r = sub.add_parser("run", help="measure (GPU machine)")
    r.add_argument("--artifacts", required=True)
    r.add_argument("--tcc-run", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    r.add_argument("--steps", type=int, default=50)
    r.add_argument("--warmup", type=int, default=10)
    r.add_argument("--no-compile", action="store_true",
                   help="skip torch.compile")
    w = sub.add_parser("torch-worker")
    w.add_argument("--model", choices=MODELS, required=True)
    w.add_argument("--mode", choices=["eager", "compile"], required=True)
    w.add_argument("--batch", type=int, required=True)
    w.add_argument("--device", default="cuda")
    w.add_argument("--steps", type=int, default=50)
    w.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    if args.cmd == "prepare":
        if args.batch < 0:
            ap.error("--batch must be positive")
        for name in args.models.split(",") if args.models else []:
            if name not in MODELS:
                ap.error(f"--models: no model '{name}' ({', '.join(MODELS)})")
        prepare(args)
    elif args.cmd == "run":
        sys.exit(run(args))
    else:
        torch_worker(args)


if __name__ == "__main__":
    main()

"""Long-lived worker processes of cpu_vs_pytorch.py: one per PyTorch or
ONNX Runtime system, each in its own process so that its peak RSS is its
own.

  python cpu_workers.py SYSTEM DIR --threads 2 --warmup 3

DIR is what cpu_models.prepare wrote. The worker builds its system, takes
one step on the batch and reports that step's loss (the loss of the
initial weights, which every system must agree on), warms up, and then
answers commands on stdin, one per line, each with one JSON line on stdout
prefixed by '@@' (libraries may print lines of their own):

  run N   time N steps: {"times": [seconds, ...]}
  quit    {"vmhwm_mib": the process's peak RSS} and exit

(`ort-artifacts DIR` writes ONNX Runtime's training artifacts; the ort
worker runs it as a process of its own.)
"""
import argparse
import json
import os
import subprocess
import sys
import time

SYSTEMS = {
    "torch-fused": "PyTorch eager, AdamW(fused=True)",
    "torch-foreach": "PyTorch eager, AdamW(foreach=True)",
    "compile-default": "torch.compile (model+loss, optimizer step)",
    "compile-max-autotune": "torch.compile max-autotune-no-cudagraphs",
    "ort": "ONNX Runtime Training (AdamW)",
}
LR, BETAS, EPS, WEIGHT_DECAY = 1e-3, (0.9, 0.999), 1e-8, 0.01


def say(obj):
    sys.stdout.write("@@" + json.dumps(obj) + "\n")
    sys.stdout.flush()


def vmhwm_mib():
    """The process's own peak RSS. ru_maxrss would also count the parent's
    peak at fork, which Linux carries across exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def torch_step_fn(system, d, meta, threads):
    """The training step of a PyTorch system, as a function returning the
    loss tensor, and a description of the setup."""
    import numpy as np
    import torch
    import cpu_models
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model, _, classes, _ = cpu_models.build(meta["model"])
    model.load_state_dict(torch.load(os.path.join(d, "weights.pt")))
    model.train()
    x = torch.from_numpy(np.load(os.path.join(d, "x.npy")))
    y = torch.from_numpy(np.load(os.path.join(d, "labels.npy"))).reshape(-1)
    crit = torch.nn.CrossEntropyLoss()
    kind = {"torch-fused": {"fused": True}}.get(system, {"foreach": True})
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS,
                            weight_decay=WEIGHT_DECAY, **kind)

    def loss_of(inp, target):
        return crit(model(inp).reshape(-1, classes), target)

    if system.startswith("compile-"):
        # The recipe of PyTorch's compiled-optimizer tutorial: the model and
        # its loss compiled as one graph (backward by AOTAutograd), the
        # optimizer's step compiled on its own.
        mode = None if system == "compile-default" else \
            "max-autotune-no-cudagraphs"
        fwd = torch.compile(loss_of, mode=mode)

        @torch.compile(mode=mode)
        def opt_step():
            opt.step()
    else:
        fwd, opt_step = loss_of, opt.step

    def step():
        opt.zero_grad(set_to_none=True)
        loss = fwd(x, y)
        loss.backward()
        opt_step()
        return loss

    return step, f"PyTorch {torch.__version__}"


def ort_artifacts(d, meta):
    """Writes ONNX Runtime Training's artifacts for the exported model into
    D/ort: the training graph with a cross-entropy loss block and its
    gradients, the eval graph, the AdamW graph and the checkpoint."""
    import onnx
    from onnxruntime.training import artifacts, onnxblock
    art = os.path.join(d, "ort")
    os.makedirs(art, exist_ok=True)
    src = "model_flat.onnx" if meta["flat_onnx"] else "model.onnx"
    model = onnx.load(os.path.join(d, src))
    # ORT's gradients of LayerNormalization and Dropout read their optional
    # outputs (mean and inverse std; the mask), which the exporter leaves
    # off: name them. The forward computes the same values.
    extra = {"LayerNormalization": ("mean", "inv_std"), "Dropout": ("mask",)}
    for i, node in enumerate(model.graph.node):
        want = extra.get(node.op_type, ())
        while len(node.output) < 1 + len(want):
            node.output.append(f"ort_bench_{i}_{want[len(node.output) - 1]}")
    artifacts.generate_artifacts(
        model, requires_grad=meta["trainable"],
        frozen_params=meta["frozen"], loss=artifacts.LossType.CrossEntropyLoss,
        # PyTorch's AdamW defaults (ORT's own: eps 1e-6, no weight decay).
        optimizer=onnxblock.optim.AdamW(betas=BETAS, eps=EPS,
                                        weight_decay=WEIGHT_DECAY),
        artifact_directory=art)
    # onnxblock writes the optimizer graph with the installed onnx's IR
    # version (14 for onnx 1.23), newer than ORT 1.19 reads (10); its ops
    # (opset 17, com.microsoft) need nothing newer, so say 10.
    path = os.path.join(art, "optimizer_model.onnx")
    model = onnx.load(path)
    if model.ir_version > 10:
        model.ir_version = 10
        onnx.save(model, path)


def ort_step_fn(d, threads):
    """ONNX Runtime Training's step on ort_artifacts' files, by its
    Module/Optimizer API."""
    # onnxruntime.training imports PyTorch (for ORTModule and its optim and
    # amp helpers, which this does not use): 650 MiB of RSS that is not
    # ORT's. Its training API needs none of it.
    import types
    sys.modules["torch"] = None
    for name in ("amp", "artifacts", "optim"):
        sys.modules["onnxruntime.training." + name] = types.ModuleType(name)
    import numpy as np
    import onnxruntime
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    onnxruntime.set_default_logger_severity(3)
    art = os.path.join(d, "ort")
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    state = CheckpointState.load_checkpoint(os.path.join(art, "checkpoint"))
    # No eval model: only training is timed, and ORT 1.19 rejects the eval
    # graph of a model with batch norm (its training outputs are kept with
    # training_mode off).
    module = Module(os.path.join(art, "training_model.onnx"), state,
                    None, device="cpu", session_options=so)
    opt = Optimizer(os.path.join(art, "optimizer_model.onnx"), module)
    opt.set_learning_rate(LR)
    module.train()
    x = np.load(os.path.join(d, "x.npy"))
    y = np.load(os.path.join(d, "labels.npy")).reshape(-1)

    def step():
        loss = module(x, y)
        opt.step()
        module.lazy_reset_grad()
        return loss

    return step, f"onnxruntime-training {onnxruntime.__version__}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("system", choices=list(SYSTEMS) + ["ort-artifacts"])
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    with open(os.path.join(args.dir, "meta.json")) as f:
        meta = json.load(f)
    if args.system == "ort-artifacts":
        ort_artifacts(args.dir, meta)
        return 0
    t0 = time.perf_counter()
    try:
        if args.system == "ort":
            import importlib.util
            if importlib.util.find_spec("onnxruntime") is None or \
                    importlib.util.find_spec("onnxruntime.training") is None:
                raise RuntimeError(
                    "no ONNX Runtime Training: neither onnxruntime-training "
                    "nor onnxruntime-training-cpu has a wheel for Python "
                    f"{sys.version_info.major}.{sys.version_info.minor} "
                    "(benchmarks/venv.sh)")
            # In a process of its own, which may import PyTorch.
            p = subprocess.run([sys.executable, __file__, "ort-artifacts",
                                args.dir], capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError("generating the training artifacts "
                                   "failed: " + p.stderr.strip()[-1500:])
            step, version = ort_step_fn(args.dir, args.threads)
        else:
            step, version = torch_step_fn(args.system, args.dir, meta,
                                          args.threads)
        loss0 = float(step())
        for _ in range(args.warmup):
            step()
    except Exception as e:  # reported as the row's reason, not a crash
        say({"error": f"{type(e).__name__}: {e}"[:2000]})
        return 1
    say({"ready": True, "loss0": loss0, "version": version,
         "startup_s": time.perf_counter() - t0})
    for line in sys.stdin:
        cmd = line.split()
        if cmd and cmd[0] == "run":
            times = []
            for _ in range(int(cmd[1])):
                t = time.perf_counter()
                step()
                times.append(time.perf_counter() - t)
            say({"times": times})
        elif cmd and cmd[0] == "quit":
            say({"vmhwm_mib": vmhwm_mib()})
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

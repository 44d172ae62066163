#!/usr/bin/python3
"""LoRA fine-tuning against PyTorch with the same adapters written by hand.

A small transformer-ish block (token projection and MLP on [N, T, D]: ONNX
MatMul weights stored [in, out]; a classifier head on the flattened rows:
Gemm, stored [out, in]) is exported with torch.onnx.export and compiled with
`--lora 4 --lora-alpha 8` on all three weight products. The adapters' initial
A values are read back from tcc: one SGD step leaves A unchanged (B = 0 makes
A's gradient zero) and `--lora-export separate` writes the adapters. Torch
then adds y += (alpha/r) (x A^T) B^T to the same layers, freezes the rest and
trains A and B with AdamW. Checked: B's gradient at step 0 (from the SGD
step), 30 steps of losses, the final adapters, the base weights untouched by
the separate export, and the merged export: the input model's graph, its
weights W + (alpha/r) B A, whose forward (loaded into the plain torch model)
equals the adapted model's.
"""
import argparse
import json
import os
import struct
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

BATCH, SAMPLES, STEPS, T, D, H, C = 8, 40, 30, 5, 6, 16, 4
RANK, ALPHA, LR = 4, 8.0, 1e-2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(D, H)
        self.ln = nn.LayerNorm(H)
        self.mlp = nn.Linear(H, H)
        self.head = nn.Linear(H * T, C)
        self.adapters = {}  # layer name -> (A, B), added by the test

    def lin(self, name, x):
        layer = getattr(self, name)
        y = layer(x)
        if name in self.adapters:
            a, b = self.adapters[name]
            y = y + (ALPHA / RANK) * ((x @ a.t()) @ b.t())
        return y

    def forward(self, x):
        h = torch.relu(self.lin("inp", x))
        h = self.ln(h)
        h = h + torch.tanh(self.lin("mlp", h))
        return self.lin("head", h.flatten(1))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n"
                 f"{p.stdout}\n{p.stderr}")
    return p.stdout


def read_safetensors(path):
    """The tensors and metadata of a safetensors file (the format is a u64
    header size, a JSON header and raw little-endian data)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        assert info["dtype"] == "F32", info
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e],
                                  dtype="<f4").reshape(info["shape"])
    return out, meta


def initializers(path):
    return {t.name: onnx.numpy_helper.to_array(t)
            for t in onnx.load(path).graph.initializer}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    tcc, d = args.tcc, args.work
    os.makedirs(d, exist_ok=True)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Block()
    onnx_path = os.path.join(d, "model.onnx")
    torch.onnx.export(model, torch.randn(2, T, D), onnx_path,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
                      opset_version=17)
    base = initializers(onnx_path)

    # Which initializer each layer's weight became: the 3-D Linear layers
    # export as MatMul with a transposed copy ([in, out]), the head as Gemm
    # with its own weight ([out, in]).
    layout = {}
    for name in ("inp", "mlp", "head"):
        w = getattr(model, name).weight.detach().numpy()
        hits = [k for k, v in base.items()
                if v.shape == w.shape and np.array_equal(v, w)]
        hits_t = [k for k, v in base.items()
                  if v.shape == w.T.shape and np.array_equal(v, w.T)]
        if hits:
            layout[name] = (hits[0], "out,in")
        else:
            assert hits_t, f"no initializer holds {name}.weight"
            layout[name] = (hits_t[0], "in,out")
    assert layout["head"] == ("head.weight", "out,in"), layout
    assert {layout["inp"][1], layout["mlp"][1]} == {"in,out"}, layout

    rng = np.random.RandomState(1)
    x = rng.randn(SAMPLES, T, D).astype(np.float32)
    y = rng.randint(0, C, size=SAMPLES).astype(np.int64)
    xp, yp = os.path.join(d, "x.npy"), os.path.join(d, "y.npy")
    np.save(xp, x)
    np.save(yp, y)
    data = ["--data", "x=" + xp, "--data", "labels=" + yp, "--no-shuffle",
            "--no-progress"]
    lora = ["--lora", str(RANK), "--lora-alpha", str(ALPHA),
            "--lora-target", "onnx::MatMul_*,head.weight"]

    # Step 0: A's initial values and B's first gradient, from one SGD step.
    init_art = os.path.join(d, "init.tcc")
    run([tcc, "compile", onnx_path, "-o", init_art, "--batch", str(BATCH),
         "--optimizer", "sgd", "--lr", str(LR)] + lora)
    init_onnx = os.path.join(d, "init.onnx")
    run([tcc, "train", init_art, "--steps", "1", "--export", init_onnx,
         "--lora-export", "separate"] + data)
    init, meta = read_safetensors(os.path.join(d, "init.lora.safetensors"))
    assert meta["format"] == "tcc-lora" and meta["rank"] == str(RANK), meta

    # The adapted torch model, from the same A values and B = 0.
    for p in model.parameters():
        p.requires_grad_(False)
    adapters = []
    for name, (w, _) in layout.items():
        a = torch.tensor(init[w + ".lora_A"].copy(), requires_grad=True)
        layer = getattr(model, name)
        assert a.shape == (RANK, layer.in_features), (name, a.shape)
        bnd = 1 / np.sqrt(layer.in_features)  # PEFT's kaiming_uniform_(a=√5)
        assert a.abs().max() <= bnd and a.abs().max() > bnd / 2, name
        b = torch.zeros(layer.out_features, RANK, requires_grad=True)
        model.adapters[name] = (a, b)
        adapters += [a, b]
    crit = nn.CrossEntropyLoss()
    xb0, yb0 = torch.from_numpy(x[:BATCH]), torch.from_numpy(y[:BATCH])
    crit(model(xb0), yb0).backward()
    for name, (w, _) in layout.items():
        a, b = model.adapters[name]
        np.testing.assert_array_equal(a.grad.numpy(), 0 * a.grad.numpy())
        # SGD: B1 = 0 - lr * dB, so dB = -B1 / lr.
        np.testing.assert_allclose(-init[w + ".lora_B"] / LR, b.grad.numpy(),
                                   rtol=1e-4, atol=1e-6,
                                   err_msg=f"{name}: B's gradient differs")
        a.grad, b.grad = None, None

    # 30 steps of AdamW on the adapters only.
    art = os.path.join(d, "model.tcc")
    report = run([tcc, "compile", onnx_path, "-o", art, "--batch", str(BATCH),
                  "--lr", str(LR), "--report"] + lora)
    for name, (w, _) in layout.items():
        assert any(l.split()[:2] == ["frozen", w] for l in report.splitlines()), report
        assert any(l.split()[:2] == ["trains", w + ".lora_A"]
                   for l in report.splitlines()), report
    assert any(l.split()[:2] == ["frozen", "ln.weight"]
               for l in report.splitlines()), report
    info = run([tcc, "inspect", art])
    assert "lora.rank" in info and "lora.alpha" in info, info
    metrics = os.path.join(d, "metrics.jsonl")
    merged_path = os.path.join(d, "merged.onnx")
    run([tcc, "train", art, "--steps", str(STEPS), "--metrics", metrics,
         "--export", merged_path] + data)
    tcc_losses = [json.loads(l)["loss"] for l in open(metrics)]
    sep_path = os.path.join(d, "separate.onnx")
    run([tcc, "train", art, "--steps", str(STEPS), "--export", sep_path,
         "--lora-export", "separate"] + data)
    final, _ = read_safetensors(os.path.join(d, "separate.lora.safetensors"))

    opt = torch.optim.AdamW(adapters, lr=LR)
    torch_losses = []
    per_epoch = SAMPLES // BATCH
    for step in range(STEPS):
        b = step % per_epoch
        xb = torch.from_numpy(x[b * BATCH:(b + 1) * BATCH])
        yb = torch.from_numpy(y[b * BATCH:(b + 1) * BATCH])
        opt.zero_grad()
        loss = crit(model(xb), yb)
        loss.backward()
        opt.step()
        torch_losses.append(loss.item())
    np.testing.assert_allclose(tcc_losses, torch_losses, rtol=1e-4, atol=1e-6,
                               err_msg="per-step losses differ")
    assert tcc_losses[-1] < tcc_losses[0], tcc_losses

    for name, (w, _) in layout.items():
        a, b = model.adapters[name]
        np.testing.assert_allclose(final[w + ".lora_A"], a.detach().numpy(),
                                   rtol=1e-4, atol=1e-6,
                                   err_msg=f"{name}: A differs")
        np.testing.assert_allclose(final[w + ".lora_B"], b.detach().numpy(),
                                   rtol=1e-4, atol=1e-6,
                                   err_msg=f"{name}: B differs")

    # The separate export is the base model, bit for bit.
    sep = initializers(sep_path)
    assert sep.keys() == base.keys()
    for k, v in base.items():
        np.testing.assert_array_equal(sep[k], v, err_msg=f"base {k} changed")

    # The merged export: the same graph, W + s B A in the weights, the rest
    # as exported.
    src, out = onnx.load(onnx_path).graph, onnx.load(merged_path).graph
    assert [(n.op_type, list(n.input)) for n in src.node] == \
           [(n.op_type, list(n.input)) for n in out.node]
    merged = initializers(merged_path)
    targets = {w: (name, lay) for name, (w, lay) in layout.items()}
    for k, v in base.items():
        if k not in targets:
            np.testing.assert_array_equal(merged[k], v, err_msg=k)
            continue
        name, lay = targets[k]
        a, b = (t.detach().numpy().astype(np.float64)
                for t in model.adapters[name])
        delta = (ALPHA / RANK) * (b @ a)  # [out, in]
        want = v + (delta if lay == "out,in" else delta.T)
        np.testing.assert_allclose(merged[k], want, rtol=1e-5, atol=1e-6,
                                   err_msg=f"merged {k}")
    plain = Block()
    with torch.no_grad():
        for name, (w, lay) in layout.items():
            m = merged[w] if lay == "out,in" else merged[w].T
            getattr(plain, name).weight.copy_(torch.from_numpy(m.copy()))
            getattr(plain, name).bias.copy_(getattr(model, name).bias)
        plain.ln.load_state_dict(model.ln.state_dict())
        xt = torch.from_numpy(x)
        np.testing.assert_allclose(plain(xt).numpy(), model(xt).numpy(),
                                   rtol=1e-4, atol=1e-5,
                                   err_msg="merged forward differs")
    print(f"lora: B's step-0 gradient, {STEPS} steps of losses (final "
          f"{tcc_losses[-1]:.6f}) and the adapters match PyTorch; separate "
          f"export keeps the base, merged export's forward matches")


if __name__ == "__main__":
    main()

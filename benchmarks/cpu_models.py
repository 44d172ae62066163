"""The three CPU benchmark models of cpu_vs_pytorch.py, their batch, and
the files every system trains from.

  python3 cpu_models.py NAME BATCH DIR   # prepare; prints meta.json

`prepare` builds the PyTorch model from a seed, exports it to ONNX once
(tcc and ONNX Runtime train from that file's initializers), saves the same
weights for the PyTorch workers (weights.pt) and one batch of inputs and
labels as .npy files that every system feeds. Nothing here times anything.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

# name: (description, default batch)
MODELS = {
    "mlp": ("MLP 784-1024-1024-10", 256),
    "gpt": ("GPT example (examples/make_gpt.py, d 128, T 64)", 16),
    "resnet": ("torchvision ResNet-18, 32x32, 10 classes", 32),
}
MLP_SIZES = [784, 1024, 1024, 10]
GPT_T = 64
GPT_VOCAB = 256
RESNET_CLASSES = 10


def build(name):
    """The torch model (built from torch's current RNG), an example input
    of batch 2, its number of classes and tcc's extra compile flags."""
    import torch
    if name == "gpt":
        from make_gpt import CharGPT
        return (CharGPT(t=GPT_T), torch.randint(0, GPT_VOCAB, (2, GPT_T)),
                GPT_VOCAB, ["--freeze", "mask"])
    if name == "resnet":
        import torchvision
        return (torchvision.models.resnet18(num_classes=RESNET_CLASSES),
                torch.randn(2, 3, 32, 32), RESNET_CLASSES, [])
    from make_mlp import make_mlp
    return make_mlp(MLP_SIZES), torch.randn(2, MLP_SIZES[0]), MLP_SIZES[-1], []


def flat(model):
    """`model` with its logits [N, T, C] reshaped to [N*T, C]: ONNX Runtime's
    cross-entropy block takes the classes on axis 1."""
    import torch.nn as nn

    class Flat(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            y = self.inner(x)
            return y.reshape(-1, y.shape[-1])

    return Flat(model)


def export(model, example, path, flatten=False):
    import torch
    kw = {}
    # torch >= 2.5 defaults to the dynamo exporter, which has no training
    # mode; the TorchScript exporter writes the graph tcc's tests use.
    if tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 5):
        kw["dynamo"] = False
    m = flat(model) if flatten else model
    torch.onnx.export(m, example, path, input_names=["x"],
                      output_names=["logits"],
                      dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}},
                      opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, **kw)


def prepare(name, batch, out, seed=0):
    """Writes OUT/{model.onnx, model_flat.onnx (GPT only), weights.pt,
    x.npy, labels.npy, meta.json} and returns meta."""
    import torch
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(seed)
    model, example, classes, flags = build(name)
    model.train()
    torch.save(model.state_dict(), os.path.join(out, "weights.pt"))
    export(model, example, os.path.join(out, "model.onnx"))
    flat_logits = example.dtype == torch.int64
    if flat_logits:
        export(model, example, os.path.join(out, "model_flat.onnx"),
               flatten=True)
    rng = np.random.default_rng(seed + 1)
    shape = (batch,) + tuple(example.shape[1:])
    if example.dtype == torch.int64:
        x = rng.integers(0, GPT_VOCAB, shape, dtype=np.int64)
        labels = rng.integers(0, classes, shape, dtype=np.int64)
    else:
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        labels = rng.integers(0, classes, (batch,), dtype=np.int64)
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "labels.npy"), labels)
    # The names ONNX gave the parameters (what ORT trains) and the rest of
    # the initializers (buffers: the GPT's mask, batch-norm statistics).
    import onnx
    g = onnx.load(os.path.join(out, "model_flat.onnx" if flat_logits
                               else "model.onnx")).graph
    params = {("inner." if flat_logits else "") + n
              for n, _ in model.named_parameters()}
    inits = [t.name for t in g.initializer]
    # A buffer that the exporter kept as an initializer is frozen for tcc
    # (PyTorch 1.13 keeps the GPT's mask; 2.x folds it into a constant).
    for i in range(len(flags) - 1, 0, -1):
        if flags[i - 1] == "--freeze" and flags[i] not in inits:
            del flags[i - 1:i + 1]
    meta = {"model": name, "batch": batch, "classes": classes,
            "tcc_flags": flags, "flat_onnx": flat_logits,
            "exporter": f"PyTorch {torch.__version__}",
            "trainable": [n for n in inits if n in params],
            "frozen": [n for n in inits if n not in params],
            "params": sum(p.numel() for p in model.parameters())}
    if len(meta["trainable"]) != len(params):
        raise RuntimeError(f"{name}: the ONNX initializers do not name every "
                           f"parameter ({len(meta['trainable'])} of "
                           f"{len(params)} found)")
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("model", choices=MODELS)
    ap.add_argument("batch", type=int)
    ap.add_argument("dir")
    a = ap.parse_args()
    print(json.dumps(prepare(a.model, a.batch, a.dir)))

"""Exports the data-movement pieces of a transformer with torch.onnx.export.

usage: make_transformer_bits.py OUTDIR

Writes, at opset 17 and with a dynamic batch axis (so the exporter emits its
run-time shape arithmetic: Shape -> Gather -> Unsqueeze -> Concat -> Reshape):

  embedding.onnx  token + learned positional embedding (int64 ids [B, 8]),
                  then a linear head: Gather on a parameter, Range, Unsqueeze.
  heads.onnx      qkv projection, split, x.view(B, T, H, C // H).transpose(1, 2),
                  attention with a causal mask from a registered buffer
                  (Slice, Equal, Where), merge heads, output projection.
  split_cat.onnx  torch.split / torch.cat / x[:, :T-1] and x[:, 1:].

Needs Debian's python3-torch (1.13) and python3-onnx.
"""
import os
import sys
import warnings

import torch
import torch.nn as nn


class Embedding(nn.Module):
    def __init__(self, vocab=50, block=8, dim=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        t = ids.shape[1]
        pos = torch.arange(t).unsqueeze(0)
        return self.head(self.tok(ids) + self.pos(pos))


class Heads(nn.Module):
    def __init__(self, dim=16, heads=4, block=8):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, 10)
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(block, block)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = q @ k.transpose(-2, -1)
        att = att.masked_fill(self.mask[:t, :t] == 0, -1e9).softmax(-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class SplitCat(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        a, b = torch.split(x, [2, 4], dim=-1)
        y = torch.cat([b, a * 2], dim=-1)
        t = x.shape[1]
        return self.lin(y[:, : t - 1]) + self.lin(y)[:, 1:]


def export(model, example, name, input_name, out_dir):
    torch.manual_seed(0)
    path = os.path.join(out_dir, name + ".onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (example,), path, opset_version=17,
            input_names=[input_name], output_names=["y"],
            dynamic_axes={input_name: {0: "batch"}, "y": {0: "batch"}})


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    export(Embedding(), torch.randint(0, 50, (2, 8)), "embedding", "ids", out_dir)
    export(Heads(), torch.randn(2, 8, 16), "heads", "x", out_dir)
    export(SplitCat(), torch.randn(2, 5, 6), "split_cat", "x", out_dir)


if __name__ == "__main__":
    main()

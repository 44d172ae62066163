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
  packed_mha.onnx nn.MultiheadAttention(batch_first=True) as PyTorch 2.x
                  computes it: the packed projection split by unflatten,
                  transpose and select (Gather of a scalar), heads viewed
                  [B, H, T, D], q and k each scaled by sqrt(scale).

Needs Debian's python3-torch (1.13) and python3-onnx.
"""
import math
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


class PackedMha(nn.Module):
    """nn.MultiheadAttention(batch_first=True) written as PyTorch 2.x's
    F.multi_head_attention_forward computes it (and scaled_dot_product_
    attention as its ONNX export writes it), so that PyTorch 1.13 exports
    the graph PyTorch 2.x's exporter does."""

    def __init__(self, dim=16, heads=4, block=8):
        super().__init__()
        self.in_proj = nn.Linear(dim, 3 * dim)
        self.out_proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 10)
        self.heads = heads
        self.register_buffer("mask", torch.triu(
            torch.full((block, block), float("-inf")), diagonal=1))

    def forward(self, x):
        x = x.transpose(1, 0)  # [T, B, E]
        t, b, e = x.shape
        h, d = self.heads, e // self.heads
        proj = self.in_proj(x).view(t, b, 3, e).unsqueeze(0)  # unflatten
        proj = proj.transpose(0, -2).squeeze(-2).contiguous()
        q, k, v = proj[0], proj[1], proj[2]
        q = q.view(t, b * h, d).transpose(0, 1).view(b, h, t, d)
        k = k.view(t, b * h, d).transpose(0, 1).view(b, h, t, d)
        v = v.view(t, b * h, d).transpose(0, 1).view(b, h, t, d)
        s = 1.0 / math.sqrt(math.sqrt(d))
        att = (q * s) @ (k.transpose(-2, -1) * s) + self.mask[:t, :t]
        y = att.softmax(-1) @ v
        y = y.permute(2, 0, 1, 3).contiguous().view(b * t, e)
        y = self.out_proj(y).view(t, b, e)
        return self.head(y.transpose(1, 0))


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
    export(PackedMha(), torch.randn(2, 8, 16), "packed_mha", "x", out_dir)


if __name__ == "__main__":
    main()

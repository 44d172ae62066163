#!/usr/bin/python3
"""Exports the GPT-style character model to ONNX.

Token + position embedding, pre-norm nn.TransformerEncoderLayer blocks with
GELU and a causal mask, a final LayerNorm and a linear head over the vocabulary
(256 byte values). Input `x` is int64 token ids [N, T]; output `logits` is
[N, T, 256]. Train with `--loss cross_entropy` and labels [N, T] (the next
token at every position).

  /usr/bin/python3 examples/make_gpt.py -o examples/gpt.onnx
"""
import argparse

import torch
import torch.nn as nn


class CharGPT(nn.Module):
    """`gelu` is "erf" (nn.GELU's default) or "tanh" (its tanh approximation,
    GPT-2's own activation)."""

    def __init__(self, vocab=256, d=128, heads=4, layers=2, t=64, dropout=0.0,
                 gelu="erf"):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(t, d) * 0.02)
        if gelu not in ("erf", "tanh"):
            raise ValueError(f"gelu must be erf or tanh, got {gelu!r}")
        act = "gelu" if gelu == "erf" else nn.GELU(approximate="tanh")
        block = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d,
                                           dropout=dropout, activation=act,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers,
                                            enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, x):
        h = self.tok(x) + self.pos[: x.shape[1]]
        h = self.blocks(h, mask=self.mask)
        return self.head(self.norm(h))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-o", "--output", default="examples/gpt.onnx")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=256,
                    help="classes of the head (token ids stay bytes); a "
                    "vocabulary wider than 2048 gives the loss a block of "
                    "GPU threads per row")
    ap.add_argument("--gelu", choices=["erf", "tanh"], default="erf",
                    help="GELU exactly (erf) or its tanh approximation")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    if args.vocab < 256:
        ap.error("--vocab must be at least 256 (the byte tokens)")
    model = CharGPT(vocab=args.vocab, t=args.seq, dropout=args.dropout,
                    gelu=args.gelu)
    model.train()
    x = torch.randint(0, 256, (2, args.seq))
    torch.onnx.export(model, x, args.output, input_names=["x"],
                      output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

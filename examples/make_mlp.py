#!/usr/bin/python3
"""Exports the example MLP (64 -> 128 -> 128 -> 10, ReLU) to ONNX.

The batch axis is dynamic, so `tcc compile --batch N` picks the batch size.
Run with Debian's python3-torch:  /usr/bin/python3 examples/make_mlp.py
"""
import argparse

import torch
import torch.nn as nn


def make_mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-o", "--output", default="examples/mlp.onnx")
    ap.add_argument("--sizes", default="64,128,128,10",
                    help="layer widths, input first")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    sizes = [int(s) for s in args.sizes.split(",")]
    model = make_mlp(sizes)
    x = torch.randn(2, sizes[0])
    torch.onnx.export(model, x, args.output, input_names=["x"],
                      output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

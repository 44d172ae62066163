#!/usr/bin/python3
"""End to end against PyTorch: torch.gather, scatter, scatter_add, topk,
repeat, pixel_shuffle and one_hot exported by torch.onnx.export (opset 17)
as GatherElements, ScatterElements (with reduction add), TopK, Tile,
DepthToSpace and OneHot.

As math_ops_parity.py: each case compiles a small module with tcc (mse loss,
SGD with lr = 1), trains one step, and compares the loss and every
parameter's gradient with PyTorch's. The gather indices repeat, so the
scatter-add of its gradient must accumulate; the scatter's indices are
distinct in each row (torch's gradient rule, which tcc follows, is exact
only then).
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from math_ops_parity import parity_case  # noqa: E402


class GatherScatter(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.register_buffer("gi", torch.tensor([[0, 3, 3, 7, -1 + 8]]))
        self.register_buffer("si", torch.tensor([[6, 1, 4]]))
        self.register_buffer("ai", torch.tensor([[2, 2, 5, 0, 2]]))

    def forward(self, x):
        h = self.fc(x)
        n = h.shape[0]
        g = torch.gather(h, 1, self.gi.expand(n, -1))           # [N, 5]
        s = torch.scatter(h, 1, self.si.expand(n, -1), 2 * g[:, :3])
        a = h.scatter_add(1, self.ai.expand(n, -1), g * g)
        v, _ = torch.topk(h, 3, dim=1)
        w, _ = torch.topk(h, 2, dim=1, largest=False)
        return torch.cat([g, s, a, v, w, h.repeat(1, 2)], dim=1)


class Rearrange(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)

    def forward(self, x):
        h = self.fc(x)
        n = h.shape[0]
        p = F.pixel_shuffle(h.reshape(n, 8, 1, 1), 2)            # [N, 2, 2, 2]
        hot = F.one_hot(h.argmax(-1), 8).to(h.dtype)
        return torch.cat([p.reshape(n, 8) * 3, hot * h], dim=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    t, w = args.tcc, args.work
    parity_case(t, w, "gather_scatter", GatherScatter(), (4, 6),
                ["GatherElements", "ScatterElements", "TopK", "Tile"])
    parity_case(t, w, "rearrange", Rearrange(), (4, 6),
                ["DepthToSpace", "OneHot"])


if __name__ == "__main__":
    main()

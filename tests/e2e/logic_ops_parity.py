#!/usr/bin/python3
"""End to end against PyTorch: comparisons, logic, Min/Max, Trilu and
ReduceMax/ReduceMin exported by torch.onnx.export at opset 17.

As math_ops_parity.py: each case compiles a small module with tcc (mse loss,
SGD with lr = 1), trains one step, and compares the loss and every
parameter's gradient (p0 - p1) with PyTorch's (rtol 1e-4). The tie cases
pin the tie rules: torch.maximum/minimum split the gradient half and half
between equal operands, amax/amin share it evenly among the positions that
attain the extremum; the operands are bit-equal but carry different
derivatives (2*h and h + h), so another rule would give other gradients.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from math_ops_parity import parity_case  # noqa: E402


class MaskedSelect(nn.Module):
    """Comparisons and logic build a run-time mask that selects between two
    branches; maximum/minimum join them."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.fc2 = nn.Linear(6, 8)

    def forward(self, x):
        h, g = self.fc(x), self.fc2(x)
        m = ((h > 0) & ~(g < -0.5)) | ((h <= g) ^ (g >= 1.0))
        a = torch.where(m, h, 0.1 * g)
        return torch.maximum(a, g) + torch.minimum(h, 0.5 * g)


class CausalMaxPool(nn.Module):
    """Scores masked by Trilu on run-time data (upper and lower, with k),
    then max- and min-pooled over keys and queries."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(6, 8)
        self.k = nn.Linear(6, 8)

    def forward(self, x):
        s = self.q(x) @ self.k(x).transpose(1, 2)  # [N, T, T]
        s = torch.triu(s, diagonal=1) + 0.5 * torch.tril(s, diagonal=-1)
        return torch.amax(s, dim=-1) + torch.amin(s, dim=1)


class Ties(nn.Module):
    """Bit-equal operands with different derivatives: 2h and h + h."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)

    def forward(self, x):
        h = self.fc(x)
        a, b = 2 * h, h + h
        both = torch.cat([a, b], dim=-1)
        return (torch.maximum(a, b) + torch.minimum(b, a)).sum(-1, keepdim=True) \
            + torch.amax(both, dim=-1, keepdim=True) + torch.amin(both, dim=-1, keepdim=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    t, w = args.tcc, args.work
    parity_case(t, w, "masked_select", MaskedSelect(), (8, 6),
                ["Greater", "Less", "LessOrEqual", "GreaterOrEqual", "And", "Or",
                 "Xor", "Not", "Where", "Max", "Min"])
    parity_case(t, w, "causal_max_pool", CausalMaxPool(), (4, 5, 6),
                ["Trilu", "ReduceMax", "ReduceMin"])
    parity_case(t, w, "ties", Ties(), (8, 6), ["Max", "Min", "ReduceMax", "ReduceMin"])


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""End to end against PyTorch: padding, PReLU, instance/group normalization,
global max pooling, transposed convolution and resizing, exported by
torch.onnx.export at opset 17 (Pad, PRelu, InstanceNormalization,
ConvTranspose, Resize).

Each case compiles a small torch module with tcc (mse loss, SGD with lr = 1)
and trains one step on one batch: the step's loss is the forward output's
mse, and each parameter's change p0 - p1 is its gradient. Both must match
PyTorch (rtol 1e-4), so the gradients through Pad's reflect/edge gathers,
Resize's interpolation and ConvTranspose are checked against torch's.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from math_ops_parity import parity_case  # noqa: E402


class Pads(nn.Module):
    """F.pad in constant (with a value, and a negative pad that crops),
    reflect and replicate modes, after a convolution so that the gradients
    that flow back through the padding reach a parameter."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)

    def forward(self, x):
        h = self.conv(x)
        a = F.pad(h, (1, 2, 0, 1), mode="reflect")
        b = F.pad(h, (2, 1, 1, 0), mode="replicate")
        c = F.pad(h, (1, -1, 2, 1), mode="constant", value=0.5)
        return torch.cat([a.flatten(1), b.flatten(1), c.flatten(1)], 1)


class Norms(nn.Module):
    """PReLU per channel and shared, InstanceNorm2d with affine parameters,
    GroupNorm (exported as InstanceNormalization over groups). (torch 1.13
    exports adaptive_max_pool2d(h, 1) as MaxPool, not GlobalMaxPool.)"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.prelu = nn.PReLU(4, init=0.2)
        self.prelu1 = nn.PReLU(init=0.3)
        self.inorm = nn.InstanceNorm2d(4, affine=True)
        self.gnorm = nn.GroupNorm(2, 4)
        # Distinct values: the exporter merges equal initializers (the ones
        # and zeros both norms start with) into one shared parameter.
        with torch.no_grad():
            for p in (self.inorm.weight, self.inorm.bias, self.gnorm.weight,
                      self.gnorm.bias):
                p.uniform_(0.5, 1.5)

    def forward(self, x):
        h = self.prelu(self.conv(x))
        a = self.inorm(h)
        b = self.gnorm(self.prelu1(h - 0.5))
        m = F.adaptive_max_pool2d(h, 1)
        return torch.cat([(a + b).flatten(1), m.flatten(1)], 1)


class Transposed(nn.Module):
    """ConvTranspose2d with stride, padding and output_padding; and one with
    groups, dilation and no bias."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(2, 4, 3, stride=2, padding=1, output_padding=1)
        self.up2 = nn.ConvTranspose2d(4, 2, (2, 3), stride=(1, 2), padding=(0, 1),
                                      dilation=(2, 1), groups=2, bias=False)

    def forward(self, x):
        return self.up2(torch.relu(self.up(x)))


class Resizes(nn.Module):
    """Nearest and bilinear upsampling (half_pixel, align_corners, to a
    size), bilinear downsampling; all end in a trained convolution's
    gradient."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)

    def forward(self, x):
        h = self.conv(x)
        a = F.interpolate(h, scale_factor=2, mode="nearest")
        b = F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
        c = F.interpolate(h, size=(7, 9), mode="bilinear", align_corners=True)
        d = F.interpolate(h, size=(3, 4), mode="bilinear", align_corners=False)
        return torch.cat([a.flatten(1), b.flatten(1), c.flatten(1), d.flatten(1)], 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    t, w = args.tcc, args.work
    parity_case(t, w, "pads", Pads(), (4, 2, 6, 7), ["Pad"])
    parity_case(t, w, "norms", Norms(), (4, 2, 5, 6),
                ["PRelu", "InstanceNormalization"])
    parity_case(t, w, "conv_transpose", Transposed(), (4, 2, 4, 5), ["ConvTranspose"])
    parity_case(t, w, "resize", Resizes(), (4, 2, 5, 6), ["Resize"])


if __name__ == "__main__":
    main()

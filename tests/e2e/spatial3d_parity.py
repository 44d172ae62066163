#!/usr/bin/python3
"""End to end against PyTorch: 3-D convolution and pooling (Conv3d,
ConvTranspose3d, MaxPool3d, AvgPool3d, BatchNorm3d) exported by
torch.onnx.export at opset 17. tcc imports them as 2-D ops over folded
views (frontends/onnx/OnnxOpsConv3d.cpp), so these cases check that the
folding computes PyTorch's function and gradient.

* windows / transposed: one SGD step (lr = 1) on one batch, mse loss; the
  loss and every parameter's gradient (p0 - p1) match PyTorch (rtol 1e-4).
  They cover groups, dilation, stride, padding, ceil_mode and
  count_include_pad, and ConvTranspose3d with stride, padding,
  output_padding, groups and dilation.
* video_net: a Conv3d + BatchNorm3d (training mode) + MaxPool3d + AvgPool3d
  classifier: one step's loss, gradients and running statistics against
  float64 PyTorch, then 5 AdamW steps whose losses and final weights track
  PyTorch's (resnet_parity.py's checks).
"""
import argparse
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from math_ops_parity import parity_case  # noqa: E402
from resnet_parity import check_adamw, check_one_step  # noqa: E402


class Windows(nn.Module):
    """Conv3d with groups, dilation, stride and padding; MaxPool3d with
    padding and ceil_mode; AvgPool3d with and without count_include_pad."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 4, (3, 3, 2), stride=(2, 1, 1),
                              padding=(1, 1, 0), dilation=(1, 2, 1), groups=2)
        self.conv2 = nn.Conv3d(4, 3, (2, 1, 3), padding=(1, 0, 1), bias=False)
        self.maxp = nn.MaxPool3d((2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0),
                                 ceil_mode=True)
        # (ceil-mode windows that would start in the end padding make the
        # exporter's declared shape differ from PyTorch's: avoided.)
        self.avgp = nn.AvgPool3d((3, 3, 2), stride=2, padding=(1, 1, 0),
                                 count_include_pad=False, ceil_mode=True)
        self.avgp2 = nn.AvgPool3d((2, 2, 3), stride=(1, 2, 1), padding=(1, 0, 1))

    def forward(self, x):
        h = torch.relu(self.conv(x))
        h2 = self.conv2(h)
        return torch.cat([self.maxp(h2).flatten(1), self.avgp(h2).flatten(1),
                          self.avgp2(h).flatten(1)], 1)


class Transposed(nn.Module):
    """ConvTranspose3d with stride, padding and output_padding; one with
    groups, dilation and no bias."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose3d(2, 4, 3, stride=(2, 1, 2), padding=(1, 0, 1),
                                     output_padding=(1, 0, 1))
        self.up2 = nn.ConvTranspose3d(4, 2, (2, 2, 3), stride=(3, 1, 1),
                                      padding=(0, 1, 0), dilation=(2, 1, 1),
                                      groups=2, bias=False)

    def forward(self, x):
        return self.up2(torch.relu(self.up(x)))


class VideoNet(nn.Module):
    """A tiny video classifier: the op mix of torchvision's r3d_18."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv3d(3, 8, (3, 5, 5), stride=(1, 2, 2),
                               padding=(1, 2, 2), bias=False)
        self.bn1 = nn.BatchNorm3d(8)
        self.pool = nn.MaxPool3d(3, stride=2, padding=1)
        self.conv2 = nn.Conv3d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm3d(8)
        self.avg = nn.AvgPool3d((2, 2, 2))
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        h = self.pool(torch.relu(self.bn1(self.conv1(x))))
        h = torch.relu(self.bn2(self.conv2(h)) + h)
        return self.fc(self.avg(h).flatten(1))


def video_case(tcc, work, steps=5, batch=4, lr=1e-3):
    d = os.path.join(work, "video_net")
    os.makedirs(d, exist_ok=True)
    model = VideoNet().train()
    path = os.path.join(d, "model.onnx")
    torch.onnx.export(model, torch.randn(batch, 3, 4, 8, 8), path,
                      input_names=["x"], output_names=["y"], opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    # Tracing moved the running statistics: start both from the export's.
    init = {t.name: onnx.numpy_helper.to_array(t)
            for t in onnx.load(path).graph.initializer}
    with torch.no_grad():
        for k, v in model.state_dict().items():
            if k in init:
                v.copy_(torch.from_numpy(init[k].copy()))
    rng = np.random.RandomState(1)
    x = rng.randn(steps * batch, 3, 4, 8, 8).astype(np.float32)
    y = rng.randint(0, 10, size=steps * batch).astype(np.int64)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "y.npy"), y)
    loss, grad, grad_name, torch_grad, stat = check_one_step(tcc, d, model, x,
                                                             y, batch)
    print(f"video_net: step 1 loss {loss:.6f} matches; max rel gradient diff "
          f"{grad:.2e} ({grad_name}; float32 PyTorch: {torch_grad:.2e}); "
          f"running stats {stat:.2e}")
    tl, rl, ld, torch_ld, wd = check_adamw(tcc, d, model, x, y, batch, steps,
                                           lr, 1e-3)
    print(f"video_net: {steps} AdamW steps (lr {lr}) track PyTorch: loss "
          f"{tl[0]:.4f} -> {tl[-1]:.4f} (float64 PyTorch {rl[-1]:.4f}); max "
          f"rel loss diff {ld:.2e} (float32 PyTorch: {torch_ld:.2e}), max "
          f"rel weight diff {wd:.2e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tcc", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    t, w = args.tcc, args.work
    parity_case(t, w, "windows3d", Windows(), (4, 2, 5, 7, 6),
                ["Conv", "MaxPool", "AveragePool"])
    parity_case(t, w, "conv_transpose3d", Transposed(), (4, 2, 3, 4, 3),
                ["ConvTranspose"])
    torch.manual_seed(0)
    video_case(t, w)


if __name__ == "__main__":
    main()

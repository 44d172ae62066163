#!/usr/bin/python3
"""Exports a small ResNet-style CNN for the 8x8 digits to ONNX.

x [batch, 64] (examples/digits' rows) is viewed as [batch, 1, 8, 8]: a 3x3
stem with batch norm, a max pool, a basic residual block, a strided block
with a 1x1 projection, a dilated depthwise 3x3 (groups = channels), an
average pool, a global mean and a linear head. Every image
kernel tcc has is in it (conv2d with and without bias, groups, stride,
dilation; max and average pooling; batch norm in training mode), so the GPU
checks (tests/gpu/prepare.sh) train it on cuda and on cpu and compare the
loss curves. Exported in training mode (opset 17, no constant folding: the
BatchNormalization nodes stay). Run with Debian's python3-torch:

  /usr/bin/python3 examples/make_cnn.py -o cnn.onnx
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    """conv-bn-relu-conv-bn plus the input (projected when the shape
    changes), then relu."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (self.proj(x) if self.proj is not None else x))


class SmallResNet(nn.Module):
    def __init__(self, width=16, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(1, width, 3, 1, 1)
        self.bn = nn.BatchNorm2d(width)
        self.pool = nn.MaxPool2d(3, 1, 1)
        self.block1 = Block(width, width, 1)
        self.block2 = Block(width, 2 * width, 2)
        # Depthwise and dilated: groups = channels, dilation 2, pad 2.
        self.dw = nn.Conv2d(2 * width, 2 * width, 3, 1, 2, dilation=2,
                            groups=2 * width)
        self.head = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = x.reshape(x.shape[0], 1, 8, 8)
        x = self.pool(F.relu(self.bn(self.stem(x))))
        x = self.block2(self.block1(x))
        x = F.relu(self.dw(x))
        x = F.avg_pool2d(x, 2, 2)
        x = x.mean(dim=(2, 3))
        return self.head(x)


class Bottleneck(nn.Module):
    """ResNet-50's block: 1x1 down, 3x3 (strided), 1x1 up (4x), plus the
    input, projected by a strided 1x1 when the shape changes."""

    def __init__(self, cin, mid, stride):
        super().__init__()
        cout = 4 * mid
        self.c1 = nn.Conv2d(cin, mid, 1, bias=False)
        self.b1 = nn.BatchNorm2d(mid)
        self.c2 = nn.Conv2d(mid, mid, 3, stride, 1, bias=False)
        self.b2 = nn.BatchNorm2d(mid)
        self.c3 = nn.Conv2d(mid, cout, 1, bias=False)
        self.b3 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = F.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return F.relu(y + (self.proj(x) if self.proj is not None else x))


class ResNet50(nn.Module):
    """torchvision's resnet50 layout (stem 7x7/2, max pool 3x3/2, stages of
    3, 4, 6, 3 bottlenecks), written here so a benchmark machine needs no
    torchvision."""

    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn = nn.BatchNorm2d(64)
        self.pool = nn.MaxPool2d(3, 2, 1)
        blocks, cin = [], 64
        for mid, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2),
                                   (512, 3, 2)):
            for i in range(count):
                blocks.append(Bottleneck(cin, mid, stride if i == 0 else 1))
                cin = 4 * mid
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.stem(x))))
        x = self.blocks(x)
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-o", "--output", default="cnn.onnx")
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    model = SmallResNet(args.width)
    torch.onnx.export(model, torch.randn(2, 64), args.output,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

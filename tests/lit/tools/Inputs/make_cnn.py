"""Writes a small CNN (Conv, BatchNormalization in training mode, Relu,
MaxPool, GlobalAveragePool, Flatten, Gemm) as torch.onnx.export would, and
data for it.

usage: make_cnn.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.RandomState(0)


def init(name, shape, scale=0.3):
    return numpy_helper.from_array((rng.randn(*shape) * scale).astype(np.float32), name)


inits = [
    init("conv.weight", (4, 2, 3, 3)), init("conv.bias", (4,)),
    numpy_helper.from_array(np.ones(4, np.float32), "bn.weight"),
    numpy_helper.from_array(np.zeros(4, np.float32), "bn.bias"),
    numpy_helper.from_array(np.zeros(4, np.float32), "bn.running_mean"),
    numpy_helper.from_array(np.ones(4, np.float32), "bn.running_var"),
    init("fc.weight", (3, 4)), init("fc.bias", (3,)),
]
nodes = [
    helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="conv",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
    helper.make_node("BatchNormalization",
                     ["c", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"],
                     ["b", "bn.mean_out", "bn.var_out"], name="bn",
                     epsilon=1e-5, momentum=0.9, training_mode=1),
    helper.make_node("Relu", ["b"], ["r"], name="relu"),
    helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                     strides=[2, 2]),
    helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
    helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
    helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
]
graph = helper.make_graph(
    nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, 6, 6])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="pytorch")
onnx.save(model, os.path.join(out, "cnn.onnx"))
np.save(os.path.join(out, "x.npy"), (rng.randn(32, 2, 6, 6) + 1.5).astype(np.float32))
np.save(os.path.join(out, "y.npy"), rng.randint(0, 3, 32).astype(np.int64))

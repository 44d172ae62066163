"""A batch norm as PyTorch's dynamo exporter writes one for a module in
train(): opset 18, a node named after aten._native_batch_norm_legit_functional,
no training_mode (so inference mode) and no running-statistics outputs.

usage: make_bn_dynamo.py OUT.onnx

Needs Debian's python3-onnx and python3-numpy.
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
         [("bn.weight", [1, 2, 3]), ("bn.bias", [0, 1, 0]),
          ("bn.running_mean", [1, 2, 3]), ("bn.running_var", [1, 4, 9])]]
node = helper.make_node(
    "BatchNormalization",
    ["x", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"], ["y"],
    name="node__native_batch_norm_legit_functional_0", epsilon=1e-5,
    momentum=0.9)
g = helper.make_graph(
    [node], "main_graph",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4, 4])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)],
                      producer_name="pytorch")
save(m, sys.argv[1])

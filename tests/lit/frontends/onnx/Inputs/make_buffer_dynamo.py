"""Initializers as PyTorch's dynamo exporter describes them: a value_info
per initializer whose metadata_props give torch.export's input kind
(PARAMETER for w, BUFFER for inv_freq, a rotary table's frequencies that
the graph multiplies into the data as it would a weight).

usage: make_buffer_dynamo.py OUT.onnx

Needs Debian's python3-onnx (1.12, whose ValueInfoProto has no
metadata_props yet: the field, number 4 from ONNX 1.16, is written as raw
protobuf) and python3-numpy.
"""
import sys

import numpy as np
from onnx import TensorProto, ValueInfoProto, helper, numpy_helper, save

KIND = "pkg.torch.export.graph_signature.InputSpec.kind"


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def described(name, shape, kind):
    vi = helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    entry = field(1, KIND.encode()) + field(2, kind.encode())
    out = ValueInfoProto()
    out.ParseFromString(vi.SerializeToString() + field(4, entry))
    return out


inits = [numpy_helper.from_array(np.ones((4, 4), np.float32), "w"),
         numpy_helper.from_array(np.array([1, .1, .01, .001], np.float32),
                                 "inv_freq")]
nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("Mul", ["h", "inv_freq"], ["a"]),
         helper.make_node("Cos", ["a"], ["y"])]
g = helper.make_graph(
    nodes, "main_graph",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], inits)
g.value_info.extend([described("w", [4, 4], "PARAMETER"),
                     described("inv_freq", [4], "BUFFER")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)],
                      producer_name="pytorch")
save(m, sys.argv[1])

"""ONNX models the text format cannot express, one import error each.

usage: make_error_kinds.py OUTDIR

  no_graph.onnx        an opset import and no graph
  seq_input.onnx       a graph input of sequence type
  raw_size.onnx        an INT64 initializer with 12 bytes of raw data for 2
                       elements
  external_const.onnx  an INT64 initializer (a constant) in an external file,
                       s.bin, which is written too: it imports

Needs Debian's python3-onnx and python3-numpy.
"""
import os
import sys

import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper


def reshape_model(shape_init):
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"])]
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [shape_init])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def no_graph():
    m = ModelProto()
    m.ir_version = 8
    m.opset_import.add(domain="", version=17)
    return m


def seq_input():
    seq = helper.make_tensor_sequence_value_info("xs", TensorProto.FLOAT, [2])
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    g = helper.make_graph(
        nodes, "g", [seq, helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def raw_size():
    s = numpy_helper.from_array(np.array([3, 2], np.int64), "s")
    s.raw_data = s.raw_data[:12]
    return reshape_model(s)


def external_const():
    s = numpy_helper.from_array(np.array([3, 2], np.int64), "s")
    s.ClearField("raw_data")
    s.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "s.bin"), ("offset", "0"), ("length", "16")):
        e = s.external_data.add()
        e.key, e.value = k, v
    with open(os.path.join(sys.argv[1], "s.bin"), "wb") as f:
        f.write(np.array([3, 2], np.int64).tobytes())
    return reshape_model(s)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, make in (("no_graph", no_graph), ("seq_input", seq_input),
                       ("raw_size", raw_size),
                       ("external_const", external_const)):
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(make().SerializeToString())


if __name__ == "__main__":
    main()

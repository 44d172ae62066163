"""Small ONNX models for the error tests of tcc compile and tcc train.

usage: make_error_models.py OUTDIR

  lm.onnx         a byte-level language model: int64 ids [N, 8] -> Gather on
                  an embedding [256, 8] -> MatMul + Add -> logits [N, 8, 256];
                  trains on token files (--tokens).
  bad_raw.onnx    an MLP whose weight initializer holds 12 bytes of raw data
                  for a [4, 2] float tensor (32 bytes).
  external.onnx   the same weight stored in an external file, w.bin, that
                  is not there.
  relu_only.onnx  y = Relu(x), x float [N, 4]: no parameter to train.
  sum.onnx        y = ReduceSum(x @ w, axis 1), x float [N, 4] -> y [N]: an
                  output without a class axis.

Needs Debian's python3-onnx and python3-numpy.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, inits, name):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def lm():
    r = np.random.RandomState(0)
    emb = numpy_helper.from_array(
        (r.randn(256, 8) * 0.1).astype(np.float32), "emb")
    w = numpy_helper.from_array((r.randn(8, 256) * 0.1).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(256, np.float32), "b")
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["h"]),
             helper.make_node("MatMul", ["h", "w"], ["z"]),
             helper.make_node("Add", ["z", "b"], ["logits"])]
    return model(
        nodes,
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["N", 8, 256])],
        [emb, w, b], "lm")


def linear(weight):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    return model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        [weight], "linear")


def bad_raw():
    w = numpy_helper.from_array(np.zeros((4, 2), np.float32), "w")
    w.raw_data = b"\0" * 12
    return linear(w)


def external():
    w = numpy_helper.from_array(np.zeros((4, 2), np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", "32")):
        e = w.external_data.add()
        e.key, e.value = k, v
    return linear(w)


def relu_only():
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    return model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], [],
        "relu")


def sum_model():
    w = numpy_helper.from_array(np.ones((4, 2), np.float32), "w")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("ReduceSum", ["h", "axes"], ["y"], keepdims=0)]
    return model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])],
        [w, axes], "sum")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, make in (("lm", lm), ("bad_raw", bad_raw),
                       ("external", external), ("relu_only", relu_only),
                       ("sum", sum_model)):
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(make().SerializeToString())


if __name__ == "__main__":
    main()

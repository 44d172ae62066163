"""Writes the binary ONNX models the frontend tests import.

usage: make_onnx.py CASE OUT.onnx

The textual syntax of onnx 1.12 cannot name nodes or store raw_data, which
exported models use; these models come from onnx.helper instead.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp():
    # Named nodes, raw_data initializers (as exporters write them), the
    # "ai.onnx" spelling of the default domain, a symbolic batch.
    w1 = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "fc1.weight")
    b1 = numpy_helper.from_array(np.zeros(3, dtype=np.float32), "fc1.bias")
    w2 = numpy_helper.from_array(np.ones((2, 3), dtype=np.float32), "fc2.weight")
    shape = numpy_helper.from_array(np.array([-1, 4], dtype=np.int64), "flat_shape")
    nodes = [
        helper.make_node("Reshape", ["x", "flat_shape"], ["xf"], name="flatten"),
        helper.make_node("MatMul", ["xf", "fc1.weight"], ["h0"], name="fc1/matmul"),
        helper.make_node("Add", ["h0", "fc1.bias"], ["h1"], name="fc1/add"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
        helper.make_node("Gemm", ["h2", "fc2.weight"], ["logits"], name="fc2", transB=1),
        helper.make_node("LogSoftmax", ["logits"], ["y"], domain="ai.onnx"),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])],
        [w1, b1, w2, shape])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx", 17)])


def single(node, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph([node], "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


CASES = {
    "mlp": mlp,
    "unsupported_named": lambda: single(
        helper.make_node("Foo", ["x"], ["y"], name="custom/foo"), [f32("x", [2])], [f32("y", [2])]),
    "mismatch_named": lambda: single(
        helper.make_node("MatMul", ["a", "b"], ["y"], name="proj"),
        [f32("a", [2, 3]), f32("b", [4, 5])], [f32("y", None)]),
    "int_input": lambda: single(
        helper.make_node("Identity", ["ids"], ["y"]),
        [helper.make_tensor_value_info("ids", TensorProto.INT32, [2, 8])], [f32("y", None)]),
    "string_input": lambda: single(
        helper.make_node("Identity", ["s"], ["y"]),
        [helper.make_tensor_value_info("s", TensorProto.STRING, [2])], [f32("y", None)]),
    "double_init": lambda: single(
        helper.make_node("Relu", ["x"], ["y"]), [f32("x", [2])], [f32("y", None)],
        [numpy_helper.from_array(np.zeros(2, dtype=np.float64), "scale")]),
    # A graph input named like the dropout state tcc adds (the text syntax
    # cannot spell the dot).
    "rng_step_clash": lambda: single(
        helper.make_node("Dropout", ["x", "r", "t"], ["y"]),
        [f32("x", [2, 4]), f32("rng.step", [1])], [f32("y", None)],
        [numpy_helper.from_array(np.array(0.5, dtype=np.float32), "r"),
         numpy_helper.from_array(np.array(True), "t")]),
    # The ratio as a float initializer: a trainable parameter unless frozen.
    "dropout_ratio_param": lambda: single(
        helper.make_node("Dropout", ["x", "r", "t"], ["y"]),
        [f32("x", [2, 4])], [f32("y", None)],
        [numpy_helper.from_array(np.array(0.5, dtype=np.float32), "r"),
         numpy_helper.from_array(np.array(True), "t")]),
    "no_shape": lambda: single(
        helper.make_node("Relu", ["x"], ["y"]),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)], [f32("y", None)]),
    # A recurrent node whose Y is omitted (""), which the text syntax cannot
    # spell.
    "rnn_no_y": lambda: single(
        helper.make_node("RNN", ["x", "w", "r"], ["", "yh"], hidden_size=5,
                         direction="reverse", clip=2.0, activations=["Relu"]),
        [f32("x", [3, 2, 4]), f32("w", [1, 5, 4]), f32("r", [1, 5, 5])],
        [f32("yh", None)], opset=7),
}

if __name__ == "__main__":
    case, out = sys.argv[1], sys.argv[2]
    onnx.save(CASES[case](), out)

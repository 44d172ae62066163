"""Writes a small ONNX backend test suite (the libonnx-testdata layout:
ROOT/node/<test>/model.onnx, test_data_set_0/{input,output}_i.pb) with tests
that must pass, fail or be unsupported, for tcc-onnx-tests' lit test."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def write(root, name, nodes, inputs, outputs, feeds, expected, opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)])
    d = os.path.join(root, "node", name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for kind, tensors in (("input", feeds), ("output", expected)):
        for i, t in enumerate(tensors):
            path = os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i))
            with open(path, "wb") as f:
                f.write(numpy_helper.from_array(t).SerializeToString())


def main(root):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    vi = helper.make_tensor_value_info
    relu = [helper.make_node("Relu", ["x"], ["y"])]
    io = ([vi("x", TensorProto.FLOAT, [2, 3])],
          [vi("y", TensorProto.FLOAT, [2, 3])])
    write(root, "test_relu_ok", relu, *io, [x], [np.maximum(x, 0)])
    wrong = np.maximum(x, 0)
    wrong[1, 2] += 0.5
    write(root, "test_relu_wrong", relu, *io, [x], [wrong])
    # Valid ONNX, but an op tcc does not have: unsupported, not failed.
    write(root, "test_unknown_op", [helper.make_node("NoSuchOp", ["x"], ["y"])],
          *io, [x], [x])
    # An invalid model (shapes that do not broadcast): a failure.
    write(root, "test_bad_broadcast",
          [helper.make_node("Add", ["x", "z"], ["y"])],
          [vi("x", TensorProto.FLOAT, [2, 3]), vi("z", TensorProto.FLOAT, [4])],
          io[1], [x, np.ones(4, np.float32)], [x])
    # A symbolic batch dimension and an INT64 shape input: the shape comes
    # from the data, the shape input becomes a constant.
    write(root, "test_reshape_shape_input",
          [helper.make_node("Reshape", ["x", "shape"], ["y"])],
          [vi("x", TensorProto.FLOAT, ["N", 3]),
           vi("shape", TensorProto.INT64, [2])],
          [vi("y", TensorProto.FLOAT, None)],
          [x, np.array([3, -1], np.int64)], [x.reshape(3, 2)])


if __name__ == "__main__":
    main(sys.argv[1])

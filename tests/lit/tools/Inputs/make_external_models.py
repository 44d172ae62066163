"""Models whose weights live in external data files, for external-data.test.

usage: make_external_models.py MLP_ONNX OUTDIR

  ext/mlp.onnx (+ mlp.onnx.data)  MLP_ONNX with every initializer in one
                                  external file, as onnx.save_model writes
                                  it with save_as_external_data=True.
  bad/NAME.onnx                   y = x @ w with w [4, 2] float stored
                                  externally in a way tcc must refuse:
    absolute   location is an absolute path
    climb      location climbs out with '..'
    link       location is a symbolic link to a file outside the folder
    outside    offset + length run past the end of the file (40 bytes)
    length     length 16, where [4, 2] float takes 32
    missing    the file does not exist
    nolocation no 'location' key
    badoffset  offset 'abc'
  bad/w.bin (40 bytes), outside.bin (beside bad/, the link's target).

Needs Debian's python3-onnx and python3-numpy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def linear(pairs):
    w = numpy_helper.from_array(np.zeros((4, 2), np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in pairs:
        e = w.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def main():
    src, out = sys.argv[1], sys.argv[2]
    ext, bad = os.path.join(out, "ext"), os.path.join(out, "bad")
    os.makedirs(ext, exist_ok=True)
    os.makedirs(bad, exist_ok=True)

    m = onnx.load(src)
    onnx.save_model(m, os.path.join(ext, "mlp.onnx"),
                    save_as_external_data=True, all_tensors_to_one_file=True,
                    location="mlp.onnx.data", size_threshold=0)

    with open(os.path.join(bad, "w.bin"), "wb") as f:
        f.write(bytes(40))
    outside = os.path.join(out, "outside.bin")
    with open(outside, "wb") as f:
        f.write(bytes(32))
    link = os.path.join(bad, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(outside, link)

    cases = {
        "absolute": [("location", outside)],
        "climb": [("location", "../outside.bin")],
        "link": [("location", "link.bin")],
        "outside": [("location", "w.bin"), ("offset", "16"), ("length", "32")],
        "length": [("location", "w.bin"), ("offset", "0"), ("length", "16")],
        "missing": [("location", "missing.bin")],
        "nolocation": [("offset", "0"), ("length", "32")],
        "badoffset": [("location", "w.bin"), ("offset", "abc")],
    }
    for name, pairs in cases.items():
        with open(os.path.join(bad, name + ".onnx"), "wb") as f:
            f.write(linear(pairs).SerializeToString())


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A ScatterND whose index tuples come at run time, with test data sets.

usage: make_scatter_bad_index.py OUTDIR
Writes OUTDIR/model.onnx (y = ScatterND(x, idx, u) over a [4, 3] x, the
[2, 1] indices a graph input) with OUTDIR/good/ (indices 3 and -4, numpy's
answer) and OUTDIR/bad/ (index 4: outside the axis of 4) as data sets.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def write(d, arrays):
    os.makedirs(d, exist_ok=True)
    for name, a in arrays.items():
        with open(os.path.join(d, name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(a).SerializeToString())


def main(out):
    node = helper.make_node("ScatterND", ["x", "idx", "u"], ["y"],
                            name="scatter")
    graph = helper.make_graph(
        [node], "scatter_runtime_index",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (4, 3)),
         helper.make_tensor_value_info("idx", TensorProto.INT64, (2, 1)),
         helper.make_tensor_value_info("u", TensorProto.FLOAT, (2, 3))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (4, 3))])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    os.makedirs(out, exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    u = -np.arange(6, dtype=np.float32).reshape(2, 3) - 1
    idx = np.array([[3], [-4]], np.int64)
    y = x.copy()
    y[3], y[0] = u[0], u[1]
    write(os.path.join(out, "good"), {"input_0": x, "input_1": idx,
                                      "input_2": u, "output_0": y})
    write(os.path.join(out, "bad"), {"input_0": x,
                                     "input_1": np.array([[1], [4]], np.int64),
                                     "input_2": u, "output_0": y})


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/env python3
"""CumSum models for every (exclusive, reverse) pair, with numpy references.

usage: make_cumsum.py OUTDIR
Writes OUTDIR/cumsum_eE_rR/{model.onnx,test_data_set_0/} for E, R in {0, 1}:
y = CumSum(x, axis=1) of a [3, 7, 4] float tensor, the axis an initializer
(pcc needs it constant; ONNX's node tests feed it as an input).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def reference(x, axis, exclusive, reverse):
    if reverse:
        x = np.flip(x, axis)
    y = np.cumsum(x, axis=axis, dtype=np.float64)
    if exclusive:
        y = y - x
    if reverse:
        y = np.flip(y, axis)
    return y.astype(np.float32)


def main(out):
    x = np.random.RandomState(3).standard_normal((3, 7, 4)).astype(np.float32)
    for e in (0, 1):
        for r in (0, 1):
            d = os.path.join(out, f"cumsum_e{e}_r{r}")
            os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
            node = helper.make_node("CumSum", ["x", "axis"], ["y"],
                                    exclusive=e, reverse=r, name="cumsum")
            graph = helper.make_graph(
                [node], "cumsum",
                [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                               x.shape)],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                               x.shape)],
                [numpy_helper.from_array(np.array(1, np.int64), "axis")])
            model = helper.make_model(
                graph, opset_imports=[helper.make_opsetid("", 14)])
            onnx.checker.check_model(model)
            onnx.save(model, os.path.join(d, "model.onnx"))
            for name, a in (("input_0", x),
                            ("output_0", reference(x, 1, e, r))):
                t = numpy_helper.from_array(a, "x" if name == "input_0"
                                            else "y")
                with open(os.path.join(d, "test_data_set_0", name + ".pb"),
                          "wb") as f:
                    f.write(t.SerializeToString())


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/env python3
"""Turns runtime inputs of an ONNX backend test into initializers.

usage: constant_inputs.py TEST_DIR OUT_DIR NAME [NAME ...]
Copies TEST_DIR (model.onnx + test_data_set_0) to OUT_DIR with the graph
inputs NAME... made initializers holding the test data's values, and the
remaining inputs renumbered. pcc needs some operands at compile time that
ONNX's node tests feed at run time (LSTM's sequence_lens, CumSum's axis).
"""
import os
import sys

import onnx
from onnx import numpy_helper


def main(src, out, names):
    model = onnx.load(os.path.join(src, "model.onnx"))
    data = os.path.join(src, "test_data_set_0")
    g = model.graph
    inputs = list(g.input)
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    kept = 0
    for k, vi in enumerate(inputs):
        with open(os.path.join(data, f"input_{k}.pb"), "rb") as f:
            t = onnx.TensorProto()
            t.ParseFromString(f.read())
        if vi.name in names:
            t.name = vi.name
            g.initializer.append(t)
            g.input.remove(vi)
            continue
        with open(os.path.join(out, "test_data_set_0", f"input_{kept}.pb"),
                  "wb") as f:
            f.write(t.SerializeToString())
        kept += 1
    for f in os.listdir(data):
        if f.startswith("output_"):
            with open(os.path.join(data, f), "rb") as a, \
                    open(os.path.join(out, "test_data_set_0", f), "wb") as b:
                b.write(a.read())
    onnx.save(model, os.path.join(out, "model.onnx"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], set(sys.argv[3:]))

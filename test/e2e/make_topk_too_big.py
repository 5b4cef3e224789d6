#!/usr/bin/env python3
"""A TopK asking for more elements than its axis has (K = 5 of 4).

usage: make_topk_too_big.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(path):
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1,
                            name="topk")
    graph = helper.make_graph(
        [node], "topk_too_big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (3, 4))],
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array([5], np.int64), "k")])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 14)])
    onnx.save(model, path)


if __name__ == "__main__":
    main(sys.argv[1])

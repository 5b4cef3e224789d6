#!/usr/bin/env python3
"""Writes models whose sizes no device holds, for memory-limits.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]


def save(name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 14)])
    onnx.save(model, os.path.join(out, name + ".onnx"))


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


save("huge_constant",
     [helper.make_node("ConstantOfShape", ["shape"], ["c"], name="fill",
                       value=helper.make_tensor("v", TensorProto.FLOAT, [1],
                                                [1.0])),
      helper.make_node("Add", ["x", "c"], ["y"], name="add")],
     [tensor("x", [1])], [tensor("y", None)], [ints("shape", [2**20, 2**20])])
save("huge_input", [helper.make_node("Relu", ["x"], ["y"], name="relu")],
     [tensor("x", [2**40])], [tensor("y", None)])
save("big_expand", [helper.make_node("Expand", ["x", "shape"], ["y"],
                                     name="expand")],
     [tensor("x", [1])], [tensor("y", None)], [ints("shape", [2**29])])
os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
with open(os.path.join(out, "inputs", "input_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(np.ones(1, np.float32)).SerializeToString())

#!/usr/bin/env python3
"""If and Loop models whose conditions fold at compile time, and two that
do not, with references.

usage: make_control_flow.py OUTDIR
Writes under OUTDIR, each with model.onnx (and test_data_set_0/ where pcc
should compile it):
  scripted/   a torch.jit.script module: a Loop bounded by a buffer (its
              body reads the iteration number and a weight from outside),
              an If on a buffer flag and an If on the input's width, as
              torch exports scripted control flow; references from PyTorch
  while/      a Loop given 10 iterations whose body stops it after 3 (its
              condition computed from the iteration number), a loop-carried
              sum and a scan output stacked over the iterations; an If
              nested in the body; references from numpy
  runtime_if/ an If on a graph input: known only at run time
  two_cond/   an If on a constant of two booleans
  long_loop/  a Loop of 10^9 iterations
  nested/     a Loop of 1000 iterations around one of 1000
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto, helper, numpy_helper


def write_data(d, inputs, outputs):
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    for prefix, tensors in (("input", inputs), ("output", outputs)):
        for i, (name, a) in enumerate(tensors):
            path = os.path.join(d, "test_data_set_0", f"{prefix}_{i}.pb")
            with open(path, "wb") as f:
                f.write(numpy_helper.from_array(a, name).SerializeToString())


class Scripted(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.register_buffer("steps", torch.tensor(3))
        self.register_buffer("flag", torch.tensor(True))

    def forward(self, x):
        h = x
        for i in range(int(self.steps)):
            h = torch.relu(self.lin(h)) + h * 0.5 + float(i)
        if bool(self.flag):
            h = h * 2.0
        else:
            h = h - 1.0
        if x.size(1) > 4:
            h = h - x
        return h


def make_scripted(out):
    d = os.path.join(out, "scripted")
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    m = torch.jit.script(Scripted().eval())
    x = torch.randn(4, 6, 16)
    path = os.path.join(d, "model.onnx")
    torch.onnx.export(m, (x,), path, opset_version=14, input_names=["x"],
                      output_names=["y"])
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert {"Loop", "If"} <= ops, ops
    with torch.no_grad():
        y = m(x)
    write_data(d, [("x", x.numpy())], [("y", y.numpy())])


def make_while(out):
    d = os.path.join(out, "while")
    f32, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    # Body: (i, cond, acc) -> (i < 2, acc + x * (i + 1), relu(acc) | -acc)
    then_b = helper.make_graph(
        [helper.make_node("Relu", ["acc_in"], ["picked_t"])], "then",
        [], [helper.make_tensor_value_info("picked_t", f32, [3, 5])])
    else_b = helper.make_graph(
        [helper.make_node("Neg", ["acc_in"], ["picked_e"])], "else",
        [], [helper.make_tensor_value_info("picked_e", f32, [3, 5])])
    body = helper.make_graph(
        [
            helper.make_node("Constant", [], ["one"],
                             value=numpy_helper.from_array(
                                 np.array(1, np.int64))),
            helper.make_node("Constant", [], ["two"],
                             value=numpy_helper.from_array(
                                 np.array(2, np.int64))),
            helper.make_node("Add", ["i", "one"], ["i1"]),
            helper.make_node("Cast", ["i1"], ["i1f"], to=f32),
            helper.make_node("Mul", ["x", "i1f"], ["step"]),
            helper.make_node("Add", ["acc_in", "step"], ["acc_out"]),
            helper.make_node("Less", ["i", "two"], ["go"]),
            helper.make_node("Less", ["i", "one"], ["first"]),
            helper.make_node("If", ["first"], ["picked"], then_branch=then_b,
                             else_branch=else_b),
        ],
        "body",
        [helper.make_tensor_value_info("i", i64, []),
         helper.make_tensor_value_info("cond_in", b, []),
         helper.make_tensor_value_info("acc_in", f32, [3, 5])],
        [helper.make_tensor_value_info("go", b, []),
         helper.make_tensor_value_info("acc_out", f32, [3, 5]),
         helper.make_tensor_value_info("picked", f32, [3, 5])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["trips", "start", "zeros"],
                          ["acc", "picks"], body=body, name="loop")],
        "while",
        [helper.make_tensor_value_info("x", f32, [3, 5])],
        [helper.make_tensor_value_info("acc", f32, [3, 5]),
         helper.make_tensor_value_info("picks", f32, [None, 3, 5])],
        [numpy_helper.from_array(np.array(10, np.int64), "trips"),
         numpy_helper.from_array(np.array(True), "start"),
         numpy_helper.from_array(np.zeros((3, 5), np.float32), "zeros")])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))

    x = np.random.RandomState(5).standard_normal((3, 5)).astype(np.float32)
    acc, picks = np.zeros_like(x), []
    for i in range(10):
        picks.append(np.maximum(acc, 0) if i < 1 else -acc)
        acc = acc + x * np.float32(i + 1)
        if not i < 2:
            break
    write_data(d, [("x", x)],
               [("acc", acc), ("picks", np.stack(picks).astype(np.float32))])


def save(out, name, graph):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(helper.make_model(graph,
                                opset_imports=[helper.make_opsetid("", 14)]),
              os.path.join(d, "model.onnx"))


def relu_body(name, suffix, loop=None):
    """A Loop body over a [4] value: Relu, or (with `loop`) that node."""
    f32, b = TensorProto.FLOAT, TensorProto.BOOL
    c_in, c_out = "c_in" + suffix, "c_out" + suffix
    v_in, v_out = "v_in" + suffix, "v_out" + suffix
    work = loop if loop else helper.make_node("Relu", [v_in], [v_out])
    return helper.make_graph(
        [helper.make_node("Identity", [c_in], [c_out]), work], name,
        [helper.make_tensor_value_info("i" + suffix, TensorProto.INT64, []),
         helper.make_tensor_value_info(c_in, b, []),
         helper.make_tensor_value_info(v_in, f32, [4])],
        [helper.make_tensor_value_info(c_out, b, []),
         helper.make_tensor_value_info(v_out, f32, [4])])


def make_refused(out):
    f32, b = TensorProto.FLOAT, TensorProto.BOOL
    x = [helper.make_tensor_value_info("x", f32, [4])]
    y = [helper.make_tensor_value_info("y", f32, [4])]
    branch = lambda name, op: helper.make_graph(
        [helper.make_node(op, ["x"], [name])], name, [],
        [helper.make_tensor_value_info(name, f32, [4])])
    save(out, "runtime_if", helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="choose",
                          then_branch=branch("t", "Relu"),
                          else_branch=branch("e", "Neg"))],
        "runtime_if", [helper.make_tensor_value_info("c", b, [])] + x, y))

    save(out, "two_cond", helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="choose",
                          then_branch=branch("t", "Relu"),
                          else_branch=branch("e", "Neg"))],
        "two_cond", x, y,
        [numpy_helper.from_array(np.array([True, False]), "c")]))

    save(out, "long_loop", helper.make_graph(
        [helper.make_node("Loop", ["trips", "", "x"], ["y"],
                          body=relu_body("body", ""), name="spin")],
        "long_loop", x, y,
        [numpy_helper.from_array(np.array(10**9, np.int64), "trips")]))

    inner = helper.make_node("Loop", ["thousand", "", "v_in"], ["v_out"],
                             body=relu_body("inner", "2"), name="inner")
    save(out, "nested", helper.make_graph(
        [helper.make_node("Loop", ["thousand", "", "x"], ["y"],
                          body=relu_body("outer", "", inner), name="outer")],
        "nested", x, y,
        [numpy_helper.from_array(np.array(1000, np.int64), "thousand")]))


def main(out):
    make_scripted(out)
    make_while(out)
    make_refused(out)


if __name__ == "__main__":
    main(sys.argv[1])

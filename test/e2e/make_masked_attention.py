#!/usr/bin/env python3
"""Attention models whose hide mask is a band, with numpy references.

usage: make_masked_attention.py OUTDIR
Writes OUTDIR/<case>/{model.onnx,test_data_set_0/}: softmax(where(hide,
fill, Q K^T / 8) + add) V over Q [2, 3, Sq, 64], K and V [2, 3, Sk, 64]
(heads of 64: on a GPU, 16-bit programs run them on tensor cores),
with the causal mask written the ways exporters write it:
  causal_inf     Not(Trilu(ones)) against -inf; the ones a 96 x 96 bool
                 initializer (a splat once imported)
  causal_finite  the same against -1e9 (masked_fill with a finite value)
  offset         40 queries after 56 earlier keys: a tril buffer sliced to
                 rows 56..96 (GPT-2's bias[:, :, k - q : k, :k])
  causal_padding Equal(tril, 0) against finfo.min, plus an additive padding
                 mask over the keys
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

B, H, D, S = 2, 3, 64, 96
MIN = float(np.finfo(np.float32).min)


def attention(q, k, v, hide, fill, add):
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64) / 8
    s = np.where(hide, fill, s)
    if add is not None:
        s = s + add
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    return (p @ v.astype(np.float64)).astype(np.float32)


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(array, name))


def build(out, case, sq, hide_nodes, hide_ref, fill, padding):
    rs = np.random.RandomState(len(case))
    q = rs.standard_normal((B, H, sq, D)).astype(np.float32)
    k = rs.standard_normal((B, H, S, D)).astype(np.float32)
    v = rs.standard_normal((B, H, S, D)).astype(np.float32)
    inputs = [("q", q), ("k", k), ("v", v)]
    add = None
    if padding:
        add = np.zeros((B, 1, 1, S), np.float32)
        add[1, ..., S - 7:] = MIN
        inputs.append(("pad", add))
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2],
                         name="kt"),
        helper.make_node("MatMul", ["q", "kt"], ["qk"], name="qk"),
        const("eight", np.array(8, np.float32)),
        helper.make_node("Div", ["qk", "eight"], ["scaled"], name="scale"),
        const("fill", np.array(fill, np.float32)),
    ] + hide_nodes + [
        helper.make_node("Where", ["hide", "fill", "scaled"], ["masked"],
                         name="where")]
    scores = "masked"
    if padding:
        nodes.append(helper.make_node("Add", ["masked", "pad"], ["padded"],
                                      name="pad_add"))
        scores = "padded"
    nodes += [helper.make_node("Softmax", [scores], ["p"], axis=-1,
                               name="softmax"),
              helper.make_node("MatMul", ["p", "v"], ["y"], name="pv")]
    ones = numpy_helper.from_array(np.ones((S, S), np.bool_), "ones")
    graph = helper.make_graph(
        nodes, case,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
         for n, a in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       (B, H, sq, D))],
        [ones])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    d = os.path.join(out, case)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    y = attention(q, k, v, hide_ref, fill, add)
    for i, (n, a) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"),
                  "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())


def main(out):
    tril = np.tril(np.ones((S, S), np.bool_))
    causal = [helper.make_node("Trilu", ["ones"], ["keep"], upper=0,
                               name="tril"),
              helper.make_node("Not", ["keep"], ["hide"], name="not")]
    build(out, "causal_inf", S, causal, ~tril, float("-inf"), False)
    build(out, "causal_finite", S, causal, ~tril, -1e9, False)
    sliced = [helper.make_node("Trilu", ["ones"], ["tril"], upper=0,
                               name="tril"),
              const("starts", np.array([56], np.int64)),
              const("ends", np.array([S], np.int64)),
              const("axes", np.array([0], np.int64)),
              helper.make_node("Slice", ["tril", "starts", "ends", "axes"],
                               ["keep"], name="slice"),
              helper.make_node("Not", ["keep"], ["hide"], name="not")]
    build(out, "offset", S - 56, sliced, ~tril[56:], float("-inf"), False)
    equal = [helper.make_node("Cast", ["ones"], ["onesf"],
                              to=TensorProto.FLOAT, name="cast"),
             helper.make_node("Trilu", ["onesf"], ["trilf"], upper=0,
                              name="tril"),
             const("zero", np.array(0, np.float32)),
             helper.make_node("Equal", ["trilf", "zero"], ["hide"],
                              name="equal")]
    build(out, "causal_padding", S, equal, ~tril, MIN, True)


if __name__ == "__main__":
    main(sys.argv[1])

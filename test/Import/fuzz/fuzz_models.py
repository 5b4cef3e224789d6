#!/usr/bin/env python3
"""Deterministic mutation fuzzer for pcc's ONNX importer.

usage: fuzz_models.py PCC WORKDIR [--count N] [--seed S] [--jobs J]
                      [--timeout T] [--slow S] [--mem-limit MB]
                      [--keep-failures] [--list]

Needs onnx and numpy (the Debian python3-onnx / python3-numpy packages; on
the pcc dev machines run it with /usr/bin/python3, since the `python3` first
on PATH may lack them). torch is not needed.

It builds a handful of small valid seed models in-process with onnx.helper
(an MLP, a transformer-style block with a shape subgraph and a causal mask, a
CNN, many single-op models, and a few models in ONNX text syntax), derives
N mutants from them and runs `PCC FILE --emit=mlir` on each, in its own
folder under WORKDIR/run/, J at a time. Mutant K is a function of (S, K)
only, so a run is reproducible for a given seed whatever J is.

The contract checked on every mutant: pcc either succeeds (exit 0, stdout
holds a module with `func.func @main`) or fails cleanly (exit status 1..127,
not killed by a signal, nothing on stdout, exactly one printable stderr line
starting with `error:`), within T seconds. Anything else is a failure: a
signal, a timeout, several stderr lines, a stack dump, "LLVM ERROR", an
abort, an exit 0 without a module, ... Runs longer than --slow seconds
(default 2) are listed as slow but are not failures.

The child runs under `ulimit -v` (--mem-limit MB, default 4096) so that a
mutant asking for a huge allocation cannot take the machine down; running
out of that memory shows up as a failure (the importer should refuse such
shapes before allocating).

Output: each failure (mutant name, mutations, exit status, first stderr
lines), the failures grouped by class (symptom + first pcc frame of any stack
dump) with the smallest reproducer of each, the slow mutants, and a last line
    fuzz: N mutants: A imported, B clean errors, C failures
Exit status 1 iff there were failures. WORKDIR/results.tsv lists every
mutant; --keep-failures keeps the failing inputs (and a .txt describing each)
in WORKDIR/failures/. --list prints the mutants without running pcc.
"""
import argparse
import collections
import concurrent.futures
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

IR_VERSION = 8

# --------------------------------------------------------------------------
# Seed models
# --------------------------------------------------------------------------


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def f32(name, shape, scale=0.1, seed=0):
    rs = np.random.RandomState(seed + len(name))
    return init(name, (rs.standard_normal(shape) * scale).astype(np.float32))


def i64(name, values, shape=None):
    a = np.asarray(values, dtype=np.int64)
    if shape is not None:
        a = a.reshape(shape)
    return init(name, a)


def const_node(out, array, name=None):
    return helper.make_node("Constant", [], [out], name=name or ("c_" + out),
                            value=numpy_helper.from_array(np.asarray(array)))


def make(name, nodes, inputs, outputs, inits=(), opset=14, value_info=(),
         infer=False):
    for i, n in enumerate(nodes):
        if not n.name:
            n.name = "%s_%d" % (n.op_type.lower(), i)
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits),
                          value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="pcc-fuzz")
    m.ir_version = IR_VERSION
    if infer:
        try:
            m = onnx.shape_inference.infer_shapes(m)
        except Exception:
            pass
    return m


def seed_mlp():
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"]),
        helper.make_node("Add", ["h1", "b1"], ["h2"]),
        helper.make_node("Relu", ["h2"], ["h3"]),
        helper.make_node("Gemm", ["h3", "w2", "b2"], ["h4"], alpha=1.0,
                         beta=1.0, transB=1),
        helper.make_node("Relu", ["h4"], ["y"]),
    ]
    return make("mlp", nodes, [vi("x", [4, 16])], [vi("y", [4, 8])],
                [f32("w1", [16, 32]), f32("b1", [32]), f32("w2", [8, 32]),
                 f32("b2", [8])], infer=True)


def seed_transformer():
    B, S, D, H, V = 2, 8, 16, 2, 50
    hd = D // H
    N = helper.make_node
    nodes = [
        # embeddings
        N("Gather", ["emb", "tokens"], ["tok_e"], axis=0),
        N("Gather", ["pos_emb", "pos_idx"], ["pos_e"], axis=0),
        N("Add", ["tok_e", "pos_e"], ["h0"]),
        # a no-op slice / unsqueeze / squeeze round trip
        N("Slice", ["h0", "sl_starts", "sl_ends", "sl_axes", "sl_steps"],
          ["h0s"]),
        N("Unsqueeze", ["h0s", "ax0"], ["h0u"]),
        N("Squeeze", ["h0u", "ax0"], ["h"]),
        # LayerNorm, decomposed
        N("ReduceMean", ["h"], ["mu"], axes=[-1], keepdims=1),
        N("Sub", ["h", "mu"], ["xc"]),
        N("Pow", ["xc", "two"], ["xc2"]),
        N("ReduceMean", ["xc2"], ["var"], axes=[-1], keepdims=1),
        N("Add", ["var", "eps"], ["var_e"]),
        N("Sqrt", ["var_e"], ["std"]),
        N("Div", ["xc", "std"], ["xn"]),
        N("Mul", ["xn", "ln_g"], ["xg"]),
        N("Add", ["xg", "ln_b"], ["ln"]),
        # QKV
        N("MatMul", ["ln", "w_qkv"], ["qkv0"]),
        N("Add", ["qkv0", "b_qkv"], ["qkv"]),
        N("Split", ["qkv", "split_sizes"], ["q", "k", "v"], axis=2),
        # shape subgraph: [B, S, H, hd] from Shape(q)
        N("Shape", ["q"], ["q_shape"]),
        N("Gather", ["q_shape", "idx0"], ["b_dim"], axis=0),
        N("Gather", ["q_shape", "idx1"], ["s_dim"], axis=0),
        N("Unsqueeze", ["b_dim", "ax0"], ["b_u"]),
        N("Unsqueeze", ["s_dim", "ax0"], ["s_u"]),
        N("Concat", ["b_u", "s_u", "heads_hd"], ["shape4"], axis=0),
        N("Reshape", ["q", "shape4"], ["q4"]),
        N("Reshape", ["k", "shape4"], ["k4"]),
        N("Reshape", ["v", "shape4"], ["v4"]),
        N("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
        N("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        N("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]),
        N("MatMul", ["qt", "kt"], ["sc0"]),
        N("Div", ["sc0", "scale"], ["sc1"]),
        # causal mask
        N("Trilu", ["ones_ss"], ["tri"], upper=0),
        N("Cast", ["tri"], ["mask"], to=TensorProto.BOOL),
        N("Where", ["mask", "sc1", "neg_big"], ["sc2"]),
        N("Softmax", ["sc2"], ["p"], axis=-1),
        N("MatMul", ["p", "vt"], ["o4"]),
        N("Transpose", ["o4"], ["o4t"], perm=[0, 2, 1, 3]),
        N("Reshape", ["o4t", "shape3"], ["o3"]),
        N("MatMul", ["o3", "w_o"], ["o"]),
        N("Add", ["h", "o"], ["res"]),
        N("Concat", ["res", "h"], ["cat"], axis=2),
        N("MatMul", ["cat", "w_out"], ["y"]),
    ]
    inits = [
        f32("emb", [V, D]), f32("pos_emb", [S, D]),
        i64("pos_idx", list(range(S))),
        i64("sl_starts", [0]), i64("sl_ends", [S]), i64("sl_axes", [1]),
        i64("sl_steps", [1]), i64("ax0", [0]),
        init("two", np.array(2.0, dtype=np.float32)),
        init("eps", np.array(1e-5, dtype=np.float32)),
        f32("ln_g", [D]), f32("ln_b", [D]),
        f32("w_qkv", [D, 3 * D]), f32("b_qkv", [3 * D]),
        i64("split_sizes", [D, D, D]),
        init("idx0", np.array(0, dtype=np.int64)),
        init("idx1", np.array(1, dtype=np.int64)),
        i64("heads_hd", [H, hd]), i64("shape3", [0, 0, D]),
        init("scale", np.array(math.sqrt(hd), dtype=np.float32)),
        init("ones_ss", np.ones([S, S], dtype=np.float32)),
        init("neg_big", np.array(-1e9, dtype=np.float32)),
        f32("w_o", [D, D]), f32("w_out", [2 * D, D]),
    ]
    return make("transformer", nodes, [vi("tokens", [B, S], TensorProto.INT64)],
                [vi("y", [B, S, D])], inits, opset=14, infer=True)


def seed_cnn():
    N = helper.make_node
    nodes = [
        N("Conv", ["x", "cw1", "cb1"], ["c1"], kernel_shape=[3, 3],
          pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1], group=1),
        N("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"],
          epsilon=1e-5, momentum=0.9),
        N("Relu", ["bn"], ["r1"]),
        N("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2],
          pads=[0, 0, 0, 0]),
        N("Conv", ["p1", "cw2"], ["c2"], kernel_shape=[3, 3],
          pads=[2, 2, 2, 2], strides=[2, 2], dilations=[2, 2], group=2),
        N("AveragePool", ["c2"], ["p2"], kernel_shape=[3, 3], strides=[1, 1],
          pads=[1, 1, 1, 1], count_include_pad=1),
        N("GlobalAveragePool", ["p2"], ["g"]),
        N("Flatten", ["g"], ["f"], axis=1),
        N("Gemm", ["f", "fc_w", "fc_b"], ["y"], transB=1),
    ]
    inits = [
        f32("cw1", [8, 3, 3, 3]), f32("cb1", [8]),
        init("bn_s", np.ones(8, np.float32)), f32("bn_b", [8]),
        f32("bn_m", [8]), init("bn_v", np.ones(8, np.float32)),
        f32("cw2", [8, 4, 3, 3]),
        f32("fc_w", [10, 8]), f32("fc_b", [10]),
    ]
    return make("cnn", nodes, [vi("x", [1, 3, 16, 16])], [vi("y", [1, 10])],
                inits, opset=13, infer=True)


def seed_shape_prop():
    """Shape arithmetic that ONNX's data propagation and pcc's folding see:
    Shape(start/end) -> Slice/Gather -> Mul/Add -> Concat -> Reshape /
    Expand / ConstantOfShape / Range."""
    N = helper.make_node
    I64 = TensorProto.INT64
    nodes = [
        N("Shape", ["x"], ["shp"]),
        N("Shape", ["x"], ["tail"], start=1),
        N("Slice", ["shp", "s0", "s1"], ["head"]),
        N("Gather", ["shp", "g2"], ["d2"], axis=0),
        N("Mul", ["d2", "two_i"], ["d2x2"]),
        N("Div", ["d2x2", "two_i"], ["d2b"]),
        N("Unsqueeze", ["d2b", "ax0"], ["d2u"]),
        N("Concat", ["head", "tail"], ["shp2"], axis=0),
        N("Reshape", ["x", "shp2"], ["xr"]),
        N("Size", ["x"], ["n"]),
        N("Range", ["zero_i", "n", "one_i"], ["idx"]),
        N("Reshape", ["idx", "shp"], ["idx3"]),
        N("Cast", ["idx3"], ["idxf"], to=TensorProto.FLOAT),
        N("Add", ["xr", "idxf"], ["xa"]),
        N("ConstantOfShape", ["d2u"], ["ones"],
          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        N("Add", ["xa", "ones"], ["xb"]),
        N("Concat", ["one_1", "d2u"], ["eshape"], axis=0),
        N("Expand", ["xb", "eshape"], ["y"]),
        N("Identity", ["shp2"], ["shape_out"]),
    ]
    inits = [i64("s0", [0]), i64("s1", [1]),
             init("g2", np.array(2, np.int64)),
             init("two_i", np.array(2, np.int64)), i64("ax0", [0]),
             init("zero_i", np.array(0, np.int64)),
             init("one_i", np.array(1, np.int64)), i64("one_1", [1])]
    return make("shape_prop", nodes, [vi("x", [2, 3, 4])],
                [vi("y", [2, 3, 4]), vi("shape_out", [3], I64)], inits,
                opset=15, infer=True)


def single(op, inputs, outputs, inits=(), opset=14, extra_nodes=(),
           inputs_names=None, out_names=None, **attrs):
    """A model with one `op` node (plus optional Constant nodes before it)."""
    in_names = inputs_names or [i.name for i in inputs] + [t.name for t in inits]
    node = helper.make_node(op, in_names, out_names or [o.name for o in outputs],
                            name="op", **attrs)
    return make("single_" + op, list(extra_nodes) + [node], inputs, outputs,
                inits, opset=opset)


def seeds_single():
    F, I64 = TensorProto.FLOAT, TensorProto.INT64
    s = []
    s.append(("expand", single("Expand", [vi("x", [3, 1])], [vi("y", [2, 3, 4])],
                               [i64("shape", [2, 3, 4])])))
    s.append(("constantofshape", make(
        "cos", [helper.make_node("ConstantOfShape", ["shape"], ["y"],
                                 value=helper.make_tensor("v", F, [1], [1.5]))],
        [], [vi("y", [3, 4])], [i64("shape", [3, 4])])))
    s.append(("constantofshape_node", make(
        "cos2", [const_node("shape", np.array([2, 5], np.int64)),
                 helper.make_node("ConstantOfShape", ["shape"], ["c"],
                                  value=helper.make_tensor("v", F, [1], [0.0])),
                 helper.make_node("Add", ["x", "c"], ["y"])],
        [vi("x", [2, 5])], [vi("y", [2, 5])])))
    s.append(("tile", single("Tile", [vi("x", [2, 3])], [vi("y", [4, 9])],
                             [i64("repeats", [2, 3])])))
    s.append(("range", make(
        "range", [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
                  helper.make_node("Cast", ["r"], ["y"], to=F)],
        [], [vi("y", [5])],
        [init("start", np.array(0, np.int64)), init("limit", np.array(10, np.int64)),
         init("delta", np.array(2, np.int64))])))
    s.append(("range_f", single(
        "Range", [], [vi("y", [4])],
        [init("start", np.array(0.0, np.float32)),
         init("limit", np.array(2.0, np.float32)),
         init("delta", np.array(0.5, np.float32))])))
    s.append(("resize", make(
        "resize", [helper.make_node("Resize", ["x", "", "scales"], ["y"],
                                    mode="nearest")],
        [vi("x", [1, 2, 4, 4])], [vi("y", [1, 2, 8, 8])],
        [init("scales", np.array([1, 1, 2, 2], np.float32))], opset=13)))
    s.append(("pad", single("Pad", [vi("x", [2, 3])], [vi("y", [4, 7])],
                            [i64("pads", [1, 2, 1, 2]),
                             init("cval", np.array(0.5, np.float32))],
                            mode="constant")))
    s.append(("pad_zero", single("Pad", [vi("x", [2, 3])], [vi("y", [2, 3])],
                                 [i64("pads", [0, 0, 0, 0])], mode="constant")))
    s.append(("pad_reflect", single("Pad", [vi("x", [4, 5])], [vi("y", [6, 7])],
                                    [i64("pads", [1, 1, 1, 1])], mode="reflect")))
    s.append(("depthtospace", single("DepthToSpace", [vi("x", [1, 8, 2, 3])],
                                     [vi("y", [1, 2, 4, 6])], blocksize=2,
                                     mode="CRD")))
    s.append(("spacetodepth", single("SpaceToDepth", [vi("x", [1, 2, 4, 6])],
                                     [vi("y", [1, 8, 2, 3])], blocksize=2)))
    s.append(("split_sizes", make(
        "split", [helper.make_node("Split", ["x", "split"], ["a", "b", "c"], axis=1),
                  helper.make_node("Concat", ["c", "a", "b"], ["y"], axis=1)],
        [vi("x", [2, 6])], [vi("y", [2, 6])], [i64("split", [1, 2, 3])], opset=13)))
    s.append(("split_attr", make(
        "split11", [helper.make_node("Split", ["x"], ["a", "b"], axis=0, split=[1, 3])],
        [vi("x", [4, 2])], [vi("a", [1, 2]), vi("b", [3, 2])], opset=11)))
    s.append(("slice_steps", single(
        "Slice", [vi("x", [10, 8])], [vi("y", [4, 3])],
        [i64("starts", [1, -1]), i64("ends", [9, -8]), i64("axes", [0, 1]),
         i64("steps", [2, -3])])))
    s.append(("slice_v1", make(
        "slice1", [helper.make_node("Slice", ["x"], ["y"], starts=[0, 1],
                                    ends=[2, 3], axes=[0, 1])],
        [vi("x", [4, 4])], [vi("y", [2, 2])], opset=9)))
    s.append(("topk", make(
        "topk", [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1,
                                  largest=1, sorted=1)],
        [vi("x", [3, 10])], [vi("v", [3, 4]), vi("i", [3, 4], I64)],
        [i64("k", [4])])))
    s.append(("cumsum", single("CumSum", [vi("x", [3, 4])], [vi("y", [3, 4])],
                               [init("axis", np.array(1, np.int64))],
                               exclusive=0, reverse=1)))
    s.append(("gather_axis", single(
        "Gather", [vi("x", [3, 5, 2])], [vi("y", [3, 2, 2, 2])],
        [i64("idx", [[0, 4], [-1, 2]])], axis=1)))
    s.append(("gatherelements", single(
        "GatherElements", [vi("x", [3, 4])], [vi("y", [3, 2])],
        [i64("idx", [[0, 3], [1, 1], [2, -1]])], axis=1)))
    s.append(("transpose", single("Transpose", [vi("x", [2, 3, 4, 5])],
                                  [vi("y", [5, 3, 2, 4])], perm=[3, 1, 0, 2])))
    s.append(("squeeze", single("Squeeze", [vi("x", [1, 3, 1, 4])],
                                [vi("y", [3, 4])], [i64("axes", [0, -2])])))
    s.append(("unsqueeze", single("Unsqueeze", [vi("x", [3, 4])],
                                  [vi("y", [1, 3, 4, 1])], [i64("axes", [0, 3])])))
    s.append(("squeeze_v11", make(
        "sq11", [helper.make_node("Squeeze", ["x"], ["y"], axes=[1])],
        [vi("x", [3, 1, 4])], [vi("y", [3, 4])], opset=11)))
    s.append(("reducesum", single("ReduceSum", [vi("x", [2, 3, 4])],
                                  [vi("y", [2, 1, 1])], [i64("axes", [1, -1])],
                                  keepdims=1, noop_with_empty_axes=0)))
    s.append(("reducemax_attr", single("ReduceMax", [vi("x", [2, 3, 4])],
                                       [vi("y", [3])], axes=[0, 2], keepdims=0)))
    s.append(("argmax", single("ArgMax", [vi("x", [3, 5])], [vi("y", [3, 1], I64)],
                               axis=1, keepdims=1, select_last_index=0)))
    s.append(("onehot", single("OneHot", [vi("idx", [4], I64)], [vi("y", [4, 6])],
                               [init("depth", np.array(6, np.int64)),
                                init("values", np.array([0, 1], np.float32))],
                               axis=-1)))
    s.append(("einsum", single("Einsum", [vi("a", [2, 3]), vi("b", [3, 4])],
                               [vi("y", [2, 4])], equation="ij,jk->ik")))
    s.append(("cast", single("Cast", [vi("x", [2, 3])], [vi("y", [2, 3], I64)],
                             to=TensorProto.INT64)))
    s.append(("concat", single("Concat", [vi("a", [2, 3]), vi("b", [2, 5])],
                               [vi("y", [2, 8])], axis=-1)))
    s.append(("flatten", single("Flatten", [vi("x", [2, 3, 4, 5])],
                                [vi("y", [6, 20])], axis=2)))
    s.append(("reshape", single("Reshape", [vi("x", [2, 3, 4])],
                                [vi("y", [6, 4])], [i64("shape", [-1, 4])])))
    s.append(("reshape_allowzero", single("Reshape", [vi("x", [2, 3, 4])],
                                          [vi("y", [2, 12])],
                                          [i64("shape", [0, -1])], allowzero=0)))
    s.append(("softmax", single("Softmax", [vi("x", [2, 3, 4])],
                                [vi("y", [2, 3, 4])], axis=1, opset=13)))
    s.append(("logsoftmax_v11", single("LogSoftmax", [vi("x", [2, 3, 4])],
                                       [vi("y", [2, 3, 4])], axis=1, opset=11)))
    s.append(("layernorm", single("LayerNormalization",
                                  [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])],
                                  [f32("g", [4]), f32("b", [4])], axis=-1,
                                  epsilon=1e-5, opset=17)))
    s.append(("trilu", single("Trilu", [vi("x", [4, 5])], [vi("y", [4, 5])],
                              [init("k", np.array(1, np.int64))], upper=1)))
    s.append(("clip", single("Clip", [vi("x", [3, 3])], [vi("y", [3, 3])],
                             [init("lo", np.array(-1, np.float32)),
                              init("hi", np.array(1, np.float32))])))
    s.append(("where_bcast", single("Where", [vi("c", [3, 1], TensorProto.BOOL),
                                             vi("a", [1, 4]), vi("b", [3, 4])],
                                    [vi("y", [3, 4])])))
    s.append(("conv_same", single("Conv", [vi("x", [1, 2, 7, 7])],
                                  [vi("y", [1, 4, 4, 4])], [f32("w", [4, 2, 3, 3])],
                                  auto_pad="SAME_UPPER", strides=[2, 2])))
    s.append(("conv1d_group", single("Conv", [vi("x", [1, 4, 10])],
                                     [vi("y", [1, 4, 8])], [f32("w", [4, 1, 3])],
                                     group=4, kernel_shape=[3])))
    s.append(("maxpool_ceil", single("MaxPool", [vi("x", [1, 1, 7, 7])],
                                     [vi("y", [1, 1, 4, 4])], kernel_shape=[2, 2],
                                     strides=[2, 2], ceil_mode=1, opset=13)))
    s.append(("avgpool_pads", single("AveragePool", [vi("x", [1, 2, 6, 6])],
                                     [vi("y", [1, 2, 3, 3])], kernel_shape=[3, 3],
                                     strides=[2, 2], pads=[1, 1, 1, 1],
                                     count_include_pad=0)))
    s.append(("gemm_attrs", single("Gemm", [vi("a", [3, 4]), vi("b", [5, 3])],
                                   [vi("y", [4, 5])], [f32("c", [5])], transA=1,
                                   transB=1, alpha=0.5, beta=2.0)))
    s.append(("leakyrelu", single("LeakyRelu", [vi("x", [3])], [vi("y", [3])],
                                  alpha=0.2)))
    s.append(("size", make(
        "size", [helper.make_node("Size", ["x"], ["n"]),
                 helper.make_node("Cast", ["n"], ["y"], to=F)],
        [vi("x", [3, 4])], [vi("y", [])])))
    s.append(("constant_attrs", make(
        "const", [helper.make_node("Constant", [], ["c"], value_floats=[1.0, 2.0]),
                  helper.make_node("Constant", [], ["k"], value_int=3),
                  helper.make_node("Cast", ["k"], ["kf"], to=F),
                  helper.make_node("Mul", ["c", "kf"], ["cm"]),
                  helper.make_node("Add", ["x", "cm"], ["y"])],
        [vi("x", [2])], [vi("y", [2])], opset=13)))
    s.append(("dropout", make(
        "dropout", [helper.make_node("Dropout", ["x", "ratio"], ["y"], seed=3)],
        [vi("x", [4])], [vi("y", [4])],
        [init("ratio", np.array(0.5, np.float32))], opset=13)))
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then",
                               [], [vi("t", [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else",
                               [], [vi("e", [2])])
    s.append(("if_subgraph", make(
        "if", [helper.make_node("If", ["cond"], ["y"], then_branch=then_g,
                                else_branch=else_g)],
        [vi("cond", [], TensorProto.BOOL), vi("x", [2])], [vi("y", [2])])))
    # Control flow pcc inlines: an If on a constant and a Loop of 3 with a
    # scan output, the body reading a weight from outside it.
    s.append(("if_folded", make(
        "if_folded", [helper.make_node("If", ["flag"], ["y"],
                                       then_branch=then_g,
                                       else_branch=else_g)],
        [vi("x", [2])], [vi("y", [2])], [init("flag", np.array(True))])))
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["v_in", "w"], ["v_out"]),
         helper.make_node("Relu", ["v_out"], ["s"])], "body",
        [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL),
         vi("v_in", [2])],
        [vi("c_out", [], TensorProto.BOOL), vi("v_out", [2]), vi("s", [2])])
    s.append(("loop_unrolled", make(
        "loop_unrolled", [helper.make_node("Loop", ["n", "", "x"], ["y", "ys"],
                                           body=body)],
        [vi("x", [2])], [vi("y", [2]), vi("ys", [3, 2])],
        [init("n", np.array(3, np.int64)), f32("w", [2])])))
    return s


# Models in ONNX's text syntax (pcc picks the parser by the .onnxtxt suffix).
TEXT_SEEDS = [
    ("txt_mlp", """<
  ir_version: 8,
  opset_import: ["" : 14]
>
mlp (float[4, 16] x) => (float[4, 8] y)
<float[16, 8] w = {%s}, float[8] b = {%s}>
{
  h = MatMul(x, w)
  h2 = Add(h, b)
  y = Relu(h2)
}
""" % (", ".join(["0.5"] * 128), ", ".join(["0.25"] * 8))),
    ("txt_shape", """<
  ir_version: 8,
  opset_import: ["" : 14]
>
g (float[2, 8, 16] x) => (float[2, 8, 4, 4] y, float[2, 3, 5] z) {
  shape = Shape(x)
  i0 = Constant <value = int64 {0}> ()
  i1 = Constant <value = int64 {1}> ()
  b = Gather <axis = 0> (shape, i0)
  s = Gather <axis = 0> (shape, i1)
  axes = Constant <value = int64[1] {0}> ()
  bu = Unsqueeze(b, axes)
  su = Unsqueeze(s, axes)
  heads = Constant <value = int64[2] {4, -1}> ()
  target = Concat <axis = 0> (bu, su, heads)
  y = Reshape(x, target)
  zs = Constant <value = int64[3] {2, 3, 5}> ()
  z = ConstantOfShape <value = float[1] {1.0}> (zs)
}
"""),
    ("txt_conv", """<
  ir_version: 8,
  opset_import: ["" : 13]
>
cnn (float[1, 2, 8, 8] x, float[4, 2, 3, 3] w) => (float[1, 4, 2, 2] y) {
  c = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]> (x, w)
  r = Relu(c)
  y = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (r)
}
"""),
]


def build_seeds():
    seeds = [("mlp", seed_mlp()), ("transformer", seed_transformer()),
             ("cnn", seed_cnn()), ("shape_prop", seed_shape_prop())] + \
        seeds_single()
    for name, m in seeds:
        try:
            onnx.checker.check_model(m)
        except Exception as e:  # unsupported or odd seeds are still useful
            sys.stderr.write("note: seed %s fails onnx.checker: %s\n"
                             % (name, str(e).splitlines()[0][:120]))
    return seeds


# --------------------------------------------------------------------------
# Mutations. Each takes (model, rng, ctx) and returns a description, or None
# when it does not apply to this model.
# --------------------------------------------------------------------------

SPECIAL_INTS = [0, -1, -2, 1, 2**31 - 1, 2**31, -2**31, 2**32 + 1, 2**40,
                2**62, 2**63 - 1, -2**63, 1000000]
SPECIAL_FLOATS = [float("nan"), float("inf"), float("-inf"), 0.0, -1.0, 1e38,
                  -1e38, 1e-45, 3.5e9]
ELEM_TYPES = [0, TensorProto.STRING, TensorProto.COMPLEX64,
              TensorProto.COMPLEX128, TensorProto.FLOAT16, TensorProto.BFLOAT16,
              TensorProto.BOOL, TensorProto.INT8, TensorProto.UINT8,
              TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64,
              TensorProto.INT32, TensorProto.INT64, TensorProto.DOUBLE,
              TensorProto.FLOAT, 17, 99, -1]
OP_TYPES = ["Relu", "Add", "MatMul", "Gemm", "Conv", "Reshape", "Transpose",
            "Softmax", "Concat", "Split", "Slice", "Gather", "Expand",
            "ConstantOfShape", "Range", "Where", "Trilu", "Cast", "Squeeze",
            "Unsqueeze", "ReduceMean", "ReduceSum", "MaxPool", "AveragePool",
            "GlobalAveragePool", "BatchNormalization", "Flatten", "Pad",
            "Shape", "Size", "Identity", "Constant", "LayerNormalization",
            "Tile", "Resize", "TopK", "Einsum", "If", "Loop", "Scan",
            "NonZero", "Unique", "ArgMax", "Pow", "Sqrt", "Div", "Clip",
            "Dropout", "Gelu", "CumSum", "OneHot", "GatherElements",
            "ScatterND", "FooBar", "", "relu", "Relu ", "Sum", "Mean", "Max",
            "Einsum", "Erf", "Not", "Equal", "LSTM", "QuantizeLinear"]
DOMAINS = ["com.microsoft", "ai.onnx.ml", "ai.onnx", "bogus.domain", "",
           "ai.onnx.preview.training", "pkg.torch.onnx"]
WEIRD_NAMES = ["", "a\nb", "tab\there", "\x01\x7f", "caf\u00e9", "x" * 5000,
               "%0", "@main", "\"q\"", "a b", "\u202e", "../x", "x:0"]


def all_nodes(m):
    return list(m.graph.node)


def pick(rng, seq):
    seq = list(seq)
    return rng.choice(seq) if seq else None


def tensor_names(m):
    names = [i.name for i in m.graph.input] + [t.name for t in m.graph.initializer]
    for n in m.graph.node:
        names.extend(o for o in n.output)
    return names


def nname(n):
    return "%s(%s)" % (n.name or "?", n.op_type)


def short(v, limit=40):
    s = repr(v)
    return s if len(s) <= limit else s[:limit] + "...(%d)" % len(s)


def attr_value(a):
    if a.type == AttributeProto.INT:
        return a.i
    if a.type == AttributeProto.INTS:
        return list(a.ints)
    if a.type == AttributeProto.FLOAT:
        return a.f
    if a.type == AttributeProto.FLOATS:
        return list(a.floats)
    if a.type == AttributeProto.STRING:
        return a.s
    return "<%s>" % AttributeProto.AttributeType.Name(a.type)


def attrs_of(m, types):
    return [(n, a) for n in m.graph.node for a in n.attribute if a.type in types]


def mut_int_attr(m, rng, ctx):
    c = pick(rng, attrs_of(m, [AttributeProto.INT]))
    if not c:
        return None
    n, a = c
    old, a.i = a.i, rng.choice(SPECIAL_INTS)
    return "%s attr %s: %d -> %d" % (nname(n), a.name, old, a.i)


def mut_ints_attr(m, rng, ctx):
    c = pick(rng, attrs_of(m, [AttributeProto.INTS]))
    if not c:
        return None
    n, a = c
    old = list(a.ints)
    new = list(old)
    how = rng.choice(["elem", "elem", "zero", "shorten", "lengthen", "empty",
                      "zeros", "zeros", "negate", "double", "huge"])
    if how == "zero" and new:
        new[rng.randrange(len(new))] = 0
    elif how == "elem" and new:
        new[rng.randrange(len(new))] = rng.choice(SPECIAL_INTS)
    elif how == "shorten" and new:
        new = new[:rng.randrange(len(new))]
    elif how == "lengthen":
        new += [rng.choice([0, 1, -1, 3] + old[:1])] * rng.choice([1, 2, 64])
    elif how == "empty":
        new = []
    elif how == "zeros":
        new = [0] * len(new)
    elif how == "negate":
        new = [-v for v in new]
    elif how == "double":
        new = new + new
    else:
        new = [2**40] * max(1, len(new))
    del a.ints[:]
    a.ints.extend(new)
    return "%s attr %s: %s -> %s" % (nname(n), a.name, short(old), short(new))


def mut_float_attr(m, rng, ctx):
    c = pick(rng, attrs_of(m, [AttributeProto.FLOAT]))
    if not c:
        return None
    n, a = c
    old, a.f = a.f, rng.choice(SPECIAL_FLOATS)
    return "%s attr %s: %g -> %g" % (nname(n), a.name, old, a.f)


def mut_string_attr(m, rng, ctx):
    c = pick(rng, attrs_of(m, [AttributeProto.STRING]))
    if not c:
        return None
    n, a = c
    old = a.s
    a.s = rng.choice([b"", b"BOGUS", b"\xff\xfe", b"SAME_LOWER", b"VALID",
                      b"linear", b"cubic", b"edge", b"wrap", b"DCR",
                      b"ij,jk", b"ij->", b"...,...->...", b"i,i,i,i->i",
                      b"a" * 10000, old.lower(), old + b"\x00"])
    return "%s attr %s: %s -> %s" % (nname(n), a.name, short(old), short(a.s))


def mut_attr_type(m, rng, ctx):
    c = pick(rng, [(n, a) for n in m.graph.node for a in n.attribute])
    if not c:
        return None
    n, a = c
    how = rng.choice(["to_float", "to_ints", "to_string", "to_int",
                      "type_only", "undefined", "remove", "duplicate",
                      "unknown", "to_tensor", "to_graph"])
    old_t = AttributeProto.AttributeType.Name(a.type)
    old_v = attr_value(a)
    if how == "remove":
        n.attribute.remove(a)
        return "%s attr %s removed" % (nname(n), a.name)
    if how == "duplicate":
        dup = n.attribute.add()
        dup.CopyFrom(a)
        if dup.type == AttributeProto.INT:
            dup.i = dup.i + 1
        return "%s attr %s duplicated" % (nname(n), a.name)
    if how == "unknown":
        n.attribute.extend([helper.make_attribute(
            rng.choice(["bogus", "axis", "perm", "to", "value"]),
            rng.choice([7, [1, 2], 1.5, "s"]))])
        return "%s extra attr %s=%s" % (nname(n), n.attribute[-1].name,
                                        attr_value(n.attribute[-1]))
    if how == "type_only":
        a.type = rng.choice([AttributeProto.INT, AttributeProto.INTS,
                             AttributeProto.FLOAT, AttributeProto.STRING,
                             AttributeProto.TENSOR, AttributeProto.GRAPH,
                             AttributeProto.SPARSE_TENSOR,
                             AttributeProto.TYPE_PROTO])
        return "%s attr %s type field %s -> %d (value kept)" % (
            nname(n), a.name, old_t, a.type)
    if how == "undefined":
        a.type = AttributeProto.UNDEFINED
        return "%s attr %s type -> UNDEFINED" % (nname(n), a.name)
    name = a.name
    if how == "to_float":
        v = float(old_v[0] if isinstance(old_v, list) and old_v else
                  old_v if isinstance(old_v, (int, float)) else 1.0)
    elif how == "to_ints":
        v = [int(x) if isinstance(x, (int, float)) and math.isfinite(x) else 1
             for x in (old_v if isinstance(old_v, list) else [old_v])]
    elif how == "to_string":
        v = str(old_v).encode()
    elif how == "to_int":
        v = int(old_v[0]) if isinstance(old_v, list) and old_v and \
            math.isfinite(old_v[0]) else 1
    elif how == "to_tensor":
        v = numpy_helper.from_array(np.array([1, 2], np.int64))
    else:
        v = helper.make_graph([], "sub", [], [])
    idx = list(n.attribute).index(a)
    n.attribute.remove(a)
    n.attribute.insert(idx, helper.make_attribute(name, v))
    return "%s attr %s: %s %s -> %s %s" % (
        nname(n), name, old_t, short(old_v),
        AttributeProto.AttributeType.Name(n.attribute[idx].type),
        short(attr_value(n.attribute[idx])))


def value_infos(m):
    out = []
    for kind, seq in (("input", m.graph.input), ("output", m.graph.output),
                      ("value_info", m.graph.value_info)):
        out.extend((kind, v) for v in seq)
    return out


def mut_dims(m, rng, ctx):
    c = pick(rng, value_infos(m))
    if not c:
        return None
    kind, v = c
    what = "%s '%s'" % (kind, v.name)
    if not v.type.HasField("tensor_type"):
        return None
    tt = v.type.tensor_type
    how = rng.choice(["dim", "dim", "dim", "add", "remove", "noshape",
                      "param", "unset", "elem", "typekind", "notype",
                      "scalar", "rank8"])
    dims = tt.shape.dim
    if how == "dim" and len(dims):
        d = dims[rng.randrange(len(dims))]
        old = d.dim_value if d.HasField("dim_value") else d.dim_param
        d.dim_value = rng.choice([0, -1, -7, 2**31, 2**40, 2**62, 2**63 - 1,
                                  1, 3])
        return "%s dim %s -> %d" % (what, old, d.dim_value)
    if how == "add":
        d = dims.add()
        d.dim_value = rng.choice([1, 2, 0])
        return "%s rank +1 (new dim %d)" % (what, d.dim_value)
    if how == "remove" and len(dims):
        del dims[rng.randrange(len(dims))]
        return "%s rank -1" % what
    if how == "noshape":
        tt.ClearField("shape")
        return "%s shape removed" % what
    if how == "param" and len(dims):
        d = dims[rng.randrange(len(dims))]
        d.dim_param = rng.choice(["N", "", "batch", "a b", "\x00"])
        return "%s dim -> dim_param %r" % (what, d.dim_param)
    if how == "unset" and len(dims):
        d = dims[rng.randrange(len(dims))]
        d.ClearField("dim_value")
        d.ClearField("dim_param")
        return "%s dim with neither value nor param" % what
    if how == "elem":
        old, tt.elem_type = tt.elem_type, rng.choice(ELEM_TYPES)
        return "%s elem_type %d -> %d" % (what, old, tt.elem_type)
    if how == "typekind":
        kind2 = rng.choice(["sequence", "map", "optional", "sparse"])
        t = v.type
        saved = onnx.TypeProto()
        saved.CopyFrom(t)
        if kind2 == "sequence":
            t.sequence_type.elem_type.CopyFrom(saved)
        elif kind2 == "map":
            t.map_type.key_type = TensorProto.INT64
            t.map_type.value_type.CopyFrom(saved)
        elif kind2 == "optional":
            t.optional_type.elem_type.CopyFrom(saved)
        else:
            t.sparse_tensor_type.elem_type = TensorProto.FLOAT
            t.sparse_tensor_type.shape.CopyFrom(saved.tensor_type.shape)
        return "%s type -> %s" % (what, kind2)
    if how == "notype":
        v.ClearField("type")
        return "%s type removed" % what
    if how == "scalar":
        tt.shape.ClearField("dim")
        return "%s -> rank 0" % what
    if how == "rank8":
        for _ in range(8):
            dims.add().dim_value = 2
        return "%s rank +8" % what
    return None


def set_raw(t):
    """Normalize t to raw_data storage (when numpy can read it)."""
    if t.HasField("raw_data") or t.data_location == TensorProto.EXTERNAL:
        return
    try:
        a = numpy_helper.to_array(t)
    except Exception:
        return
    t.CopyFrom(numpy_helper.from_array(a, t.name))


def int_consts(m):
    """(description, TensorProto) of integer tensors: initializers and
    Constant node values (shape tensors, axes, pads, repeats, ...)."""
    out = [("initializer '%s'" % t.name, t) for t in m.graph.initializer
           if t.data_type in (TensorProto.INT64, TensorProto.INT32)]
    for n in m.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.type == AttributeProto.TENSOR and a.t.data_type in (
                        TensorProto.INT64, TensorProto.INT32):
                    out.append(("Constant %s" % nname(n), a.t))
    return out


def mut_const_input(m, rng, ctx):
    c = pick(rng, int_consts(m))
    if not c:
        return None
    what, t = c
    try:
        old = numpy_helper.to_array(t).reshape(-1).tolist()
    except Exception:
        return None
    how = rng.choice(["zero", "neg", "neg", "huge2", "huge1", "max", "min",
                      "longer", "shorter", "empty", "scalar", "random", "elem",
                      "times1000"])
    if how == "zero":
        new = [0] * max(1, len(old))
    elif how == "neg":
        new = [rng.choice([-1, -2, -5, -100])] * max(1, len(old))
    elif how == "huge2":
        new = [2**20, 2**20]
    elif how == "huge1":
        new = [rng.choice([2**40, 2**31, 2**32])]
    elif how == "max":
        new = [2**63 - 1] * max(1, len(old))
    elif how == "min":
        new = [-2**63] * max(1, len(old))
    elif how == "longer":
        new = old + [rng.choice([1, 0, -1, 2])]
    elif how == "shorter":
        new = old[:-1]
    elif how == "empty":
        new = []
    elif how == "scalar":
        new = old[:1] or [1]
    elif how == "random":
        new = [rng.randint(-10, 10) for _ in old] or [3]
    elif how == "elem" and old:
        new = list(old)
        new[rng.randrange(len(new))] = rng.choice(SPECIAL_INTS)
    else:
        new = [v * 1000 for v in old] or [1000]
    dt = np.int64 if t.data_type == TensorProto.INT64 else np.int32
    bits = 63 if dt == np.int64 else 31
    new = [max(-2**bits, min(2**bits - 1, v)) for v in new]
    arr = np.array(new, dtype=dt)
    if how == "scalar":
        arr = arr.reshape([])
    t.CopyFrom(numpy_helper.from_array(arr, t.name))
    return "%s value %s -> %s" % (what, short(old), short(new))


def mut_init_data(m, rng, ctx):
    t = pick(rng, m.graph.initializer)
    if t is None:
        return None
    what = "initializer '%s'" % t.name
    set_raw(t)
    how = rng.choice(["truncate", "truncate", "extend", "dtype", "dtype",
                      "dims", "typed", "both", "strings", "rename", "dup",
                      "remove", "ext_noentries", "segment", "empty"])
    if how == "truncate" and t.HasField("raw_data"):
        n = len(t.raw_data)
        k = rng.choice([0, n // 2, max(0, n - 1), 1])
        t.raw_data = t.raw_data[:k]
        return "%s raw_data %d -> %d bytes" % (what, n, k)
    if how == "extend" and t.HasField("raw_data"):
        k = rng.choice([1, 4, 8, 4096])
        t.raw_data = t.raw_data + b"\x01" * k
        return "%s raw_data +%d bytes" % (what, k)
    if how == "dtype":
        old, t.data_type = t.data_type, rng.choice(ELEM_TYPES)
        return "%s data_type %d -> %d (bytes kept)" % (what, old, t.data_type)
    if how == "dims":
        old = list(t.dims)
        sub = rng.choice(["elem", "add", "remove", "scalar", "huge"])
        new = list(old)
        if sub == "elem" and new:
            new[rng.randrange(len(new))] = rng.choice([0, -1, 2**40, 2**62,
                                                       2**63 - 1, 3])
        elif sub == "add":
            new.append(rng.choice([1, 2]))
        elif sub == "remove" and new:
            new.pop()
        elif sub == "scalar":
            new = []
        else:
            new = [2**31, 2**31, 2**31]
        del t.dims[:]
        t.dims.extend(new)
        return "%s dims %s -> %s" % (what, old, new)
    if how == "typed":
        try:
            a = numpy_helper.to_array(t).reshape(-1)
        except Exception:
            return None
        t.ClearField("raw_data")
        k = rng.choice([len(a) - 1, len(a) + 1, 0, len(a)])
        if t.data_type in (TensorProto.FLOAT,):
            t.float_data.extend([0.5] * max(0, k))
        elif t.data_type in (TensorProto.INT64,):
            t.int64_data.extend([1] * max(0, k))
        else:
            t.int32_data.extend([1] * max(0, k))
        return "%s moved to typed field with %d of %d values" % (what, k, len(a))
    if how == "both":
        t.float_data.extend([1.0, 2.0])
        t.int64_data.extend([3])
        return "%s has raw_data and typed float_data/int64_data" % what
    if how == "strings":
        t.data_type = TensorProto.STRING
        t.ClearField("raw_data")
        t.string_data.extend([b"abc"] * max(1, int(np.prod(t.dims or [1]))))
        return "%s -> STRING with string_data" % what
    if how == "rename":
        names = [i.name for i in m.graph.input] + \
            [o for n in m.graph.node for o in n.output] + \
            [x.name for x in m.graph.initializer if x is not t] + ["", "\n"]
        old, t.name = t.name, rng.choice(names)
        return "%s renamed to %r" % (what, t.name)
    if how == "dup":
        d = m.graph.initializer.add()
        d.CopyFrom(t)
        if rng.random() < 0.5 and d.dims:
            d.dims[0] = d.dims[0] + 1
            d.raw_data = d.raw_data + d.raw_data[:len(d.raw_data) // max(1, t.dims[0])]
            return "%s duplicated with a larger dim 0" % what
        return "%s duplicated" % what
    if how == "remove":
        m.graph.initializer.remove(t)
        return "%s removed" % what
    if how == "ext_noentries":
        t.data_location = TensorProto.EXTERNAL
        return "%s data_location EXTERNAL without entries (raw kept)" % what
    if how == "segment":
        t.segment.begin = 0
        t.segment.end = rng.choice([1, -1, 2**40])
        return "%s segment set" % what
    if how == "empty":
        t.ClearField("raw_data")
        return "%s has no data" % what
    return None


def mut_names(m, rng, ctx):
    nodes = all_nodes(m)
    if not nodes:
        return None
    n = rng.choice(nodes)
    names = tensor_names(m)
    graph_in = [i.name for i in m.graph.input] + [t.name for t in m.graph.initializer]
    other_outs = [o for x in nodes if x is not n for o in x.output]
    how = rng.choice(["in_existing", "in_undefined", "in_empty", "out_collide",
                      "out_is_input", "out_empty", "node_name", "gout",
                      "add_input", "drop_input", "add_output", "no_outputs",
                      "weird_tensor", "self_loop"])
    if how == "in_existing" and len(n.input):
        i = rng.randrange(len(n.input))
        old, n.input[i] = n.input[i], rng.choice(names)
        return "%s input %d %r -> %r" % (nname(n), i, old, n.input[i])
    if how == "in_undefined" and len(n.input):
        i = rng.randrange(len(n.input))
        old, n.input[i] = n.input[i], "undefined_tensor"
        return "%s input %d %r -> undefined name" % (nname(n), i, old)
    if how == "in_empty" and len(n.input):
        i = rng.randrange(len(n.input))
        old, n.input[i] = n.input[i], ""
        return "%s input %d %r -> '' (absent optional)" % (nname(n), i, old)
    if how == "out_collide" and len(n.output) and other_outs:
        i = rng.randrange(len(n.output))
        old, n.output[i] = n.output[i], rng.choice(other_outs)
        return "%s output %r -> %r (two writers)" % (nname(n), old, n.output[i])
    if how == "out_is_input" and len(n.output) and graph_in:
        i = rng.randrange(len(n.output))
        old, n.output[i] = n.output[i], rng.choice(graph_in)
        return "%s output %r -> graph input/initializer %r" % (
            nname(n), old, n.output[i])
    if how == "out_empty" and len(n.output):
        i = rng.randrange(len(n.output))
        old, n.output[i] = n.output[i], ""
        return "%s output %r -> ''" % (nname(n), old)
    if how == "node_name":
        others = [x.name for x in nodes if x is not n]
        old, n.name = n.name, rng.choice(others + WEIRD_NAMES)
        return "node %r renamed %s" % (old, short(n.name))
    if how == "gout" and len(m.graph.output):
        o = rng.choice(m.graph.output)
        old, o.name = o.name, rng.choice(graph_in + ["undefined_out", ""])
        return "graph output %r -> %r" % (old, o.name)
    if how == "add_input":
        n.input.append(rng.choice(names + [""]))
        return "%s extra input %r" % (nname(n), n.input[-1])
    if how == "drop_input" and len(n.input):
        old = n.input.pop()
        return "%s last input %r dropped" % (nname(n), old)
    if how == "add_output":
        n.output.append(rng.choice(["extra_out", ""] + names))
        return "%s extra output %r" % (nname(n), n.output[-1])
    if how == "no_outputs":
        del n.output[:]
        return "%s outputs removed" % nname(n)
    if how == "weird_tensor":
        # Rename one tensor consistently everywhere.
        old = rng.choice(names)
        if not old:
            return None
        new = rng.choice(WEIRD_NAMES[1:])
        for x in nodes:
            for seq in (x.input, x.output):
                for i, s in enumerate(seq):
                    if s == old:
                        seq[i] = new
        for seq in (m.graph.input, m.graph.output, m.graph.value_info,
                    m.graph.initializer):
            for v in seq:
                if v.name == old:
                    v.name = new
        return "tensor %r renamed to %s everywhere" % (old, short(new))
    if how == "self_loop" and len(n.input) and len(n.output):
        n.input[0] = n.output[0]
        return "%s reads its own output %r" % (nname(n), n.output[0])
    return None


def mut_nodes(m, rng, ctx):
    g = m.graph
    nodes = all_nodes(m)
    if not nodes:
        return None
    how = rng.choice(["dup", "dup_end", "delete", "swap", "reverse", "front",
                      "op_type", "op_type", "domain", "delete_all", "many"])
    i = rng.randrange(len(nodes))
    n = nodes[i]
    if how == "dup":
        g.node.insert(i + 1, n)
        return "%s duplicated in place" % nname(n)
    if how == "dup_end":
        g.node.append(n)
        return "%s duplicated at the end" % nname(n)
    if how == "delete":
        g.node.remove(n)
        return "%s deleted" % nname(n)
    if how == "swap" and len(nodes) > 1:
        j = rng.randrange(len(nodes))
        a, b = onnx.NodeProto(), onnx.NodeProto()
        a.CopyFrom(nodes[i])
        b.CopyFrom(nodes[j])
        g.node[i].CopyFrom(b)
        g.node[j].CopyFrom(a)
        return "nodes %d and %d swapped" % (i, j)
    if how == "reverse":
        rev = [onnx.NodeProto() for _ in nodes]
        for k, x in enumerate(reversed(nodes)):
            rev[k].CopyFrom(x)
        del g.node[:]
        g.node.extend(rev)
        return "node order reversed"
    if how == "front":
        c = onnx.NodeProto()
        c.CopyFrom(n)
        g.node.remove(n)
        g.node.insert(0, c)
        return "%s moved to the front" % nname(n)
    if how == "op_type":
        old, n.op_type = n.op_type, rng.choice(OP_TYPES)
        return "%s op_type -> %r" % (nname(n).replace(n.op_type, old), n.op_type)
    if how == "domain":
        n.domain = rng.choice(DOMAINS)
        return "%s domain -> %r" % (nname(n), n.domain)
    if how == "delete_all":
        del g.node[:]
        return "all nodes deleted"
    if how == "many":
        # A long chain of copies of an elementwise node, renamed to stay SSA.
        if len(n.input) != 1 or len(n.output) != 1:
            return None
        k = rng.choice([200, 2000])
        prev = n.output[0]
        tail = []
        for j in range(k):
            c = onnx.NodeProto()
            c.CopyFrom(n)
            c.name = "%s_copy%d" % (n.name, j)
            c.input[0] = prev
            c.output[0] = prev = "%s_chain%d" % (n.output[0], j)
            tail.append(c)
        g.node.extend(tail)
        return "%s chained %d times after itself" % (nname(n), k)
    return None


def mut_opset(m, rng, ctx):
    how = rng.choice(["version", "version", "version", "dup", "remove",
                      "extra", "aionnx", "domain"])
    default = [o for o in m.opset_import if o.domain in ("", "ai.onnx")]
    if how == "version" and default:
        o = default[0]
        old, o.version = o.version, rng.choice(
            [0, 1, 6, 7, 12, 13, 15, 16, 17, 18, 99, 2**32 + 14, -1, -14,
             2**63 - 1, -2**63, 2**31 + 13])
        return "opset %d -> %d" % (old, o.version)
    if how == "dup":
        m.opset_import.extend([helper.make_opsetid(
            "", rng.choice([1, 13, 14, 99]))])
        return "default domain imported twice (second: %d)" % m.opset_import[-1].version
    if how == "remove":
        del m.opset_import[:]
        return "opset_import removed"
    if how == "extra":
        m.opset_import.extend([helper.make_opsetid(rng.choice(DOMAINS[:4]),
                                                   rng.choice([0, 1, 99]))])
        return "extra opset import %r:%d" % (m.opset_import[-1].domain,
                                             m.opset_import[-1].version)
    if how == "aionnx" and default:
        default[0].domain = "ai.onnx"
        return "opset domain '' -> 'ai.onnx'"
    if how == "domain" and default:
        default[0].domain = rng.choice(["ai.onnx.ml", "com.microsoft", "AI.ONNX"])
        return "opset domain '' -> %r" % default[0].domain
    return None


def mut_ir(m, rng, ctx):
    how = rng.choice(["ir", "ir", "nograph", "functions", "metadata",
                      "training", "producer"])
    if how == "ir":
        old, m.ir_version = m.ir_version, rng.choice(
            [0, 1, 2, 3, 4, 7, 9, 10, 99, 2**62, -1, 2**63 - 1])
        return "ir_version %d -> %d" % (old, m.ir_version)
    if how == "nograph":
        m.ClearField("graph")
        return "graph removed"
    if how == "functions":
        op = pick(rng, [n.op_type for n in m.graph.node]) or "Relu"
        f = m.functions.add()
        f.name = op
        f.domain = rng.choice(["", "local"])
        f.input.extend(["a"])
        f.output.extend(["b"])
        f.node.extend([helper.make_node("Neg", ["a"], ["b"])])
        f.opset_import.extend([helper.make_opsetid("", 14)])
        return "model-local function %r in domain %r" % (op, f.domain)
    if how == "metadata":
        p = m.metadata_props.add()
        p.key, p.value = "k" * 100, "\u00e9" * 1000
        return "metadata_props added"
    if how == "training":
        ti = m.training_info.add()
        ti.algorithm.name = "alg"
        ti.algorithm.node.extend([helper.make_node("Relu", ["x"], ["x2"])])
        return "training_info added"
    m.producer_name = "\x00\xff".encode("latin1").decode("latin1")
    m.producer_version = "1" * 10000
    return "odd producer name/version"


def mut_graph_io(m, rng, ctx):
    g = m.graph
    how = rng.choice(["rm_in", "rm_out", "dup_in", "dup_out", "no_out",
                      "no_in", "in_is_init", "unused_in", "out_is_init",
                      "out_is_in", "sparse_init", "value_info_bogus"])
    if how == "rm_in" and len(g.input):
        v = rng.choice(g.input)
        g.input.remove(v)
        return "graph input %r removed" % v.name
    if how == "rm_out" and len(g.output):
        v = rng.choice(g.output)
        g.output.remove(v)
        return "graph output %r removed" % v.name
    if how == "dup_in" and len(g.input):
        g.input.extend([rng.choice(g.input)])
        return "graph input %r listed twice" % g.input[-1].name
    if how == "dup_out" and len(g.output):
        g.output.extend([rng.choice(g.output)])
        return "graph output %r listed twice" % g.output[-1].name
    if how == "no_out":
        del g.output[:]
        return "all graph outputs removed"
    if how == "no_in" and len(g.input):
        del g.input[:]
        return "all graph inputs removed"
    if how == "in_is_init" and len(g.initializer):
        t = rng.choice(g.initializer)
        g.input.extend([helper.make_tensor_value_info(
            t.name, t.data_type, rng.choice([list(t.dims), [7], None]))])
        return "initializer %r also a graph input (%s)" % (
            t.name, "shape given" if g.input[-1].type.tensor_type.HasField("shape")
            else "no shape")
    if how == "unused_in":
        g.input.extend([vi("unused", [rng.choice([1, 0, 2**40])])])
        return "unused graph input 'unused' dims %s" % list(
            d.dim_value for d in g.input[-1].type.tensor_type.shape.dim)
    if how == "out_is_init" and len(g.initializer):
        t = rng.choice(g.initializer)
        g.output.extend([helper.make_tensor_value_info(t.name, t.data_type,
                                                       list(t.dims))])
        return "initializer %r is a graph output" % t.name
    if how == "out_is_in" and len(g.input):
        g.output.extend([g.input[0]])
        return "graph input %r is also a graph output" % g.input[0].name
    if how == "sparse_init":
        sp = g.sparse_initializer.add()
        sp.values.CopyFrom(numpy_helper.from_array(np.array([1.0, 2.0], np.float32),
                                                   rng.choice(["sp", "x"])))
        sp.indices.CopyFrom(numpy_helper.from_array(np.array([0, 5], np.int64), "i"))
        sp.dims.extend([rng.choice([4, 2, 0])])
        return "sparse initializer %r added" % sp.values.name
    if how == "value_info_bogus":
        name = pick(rng, tensor_names(m)) or "x"
        g.value_info.extend([vi(name, [rng.choice([0, 1, 99, -1])] * 7,
                                rng.choice(ELEM_TYPES))])
        return "bogus value_info for %r" % name
    return None


EXT_LOCATIONS = ["../../etc/passwd", "/etc/passwd", "a/../../x", "", "w.bin",
                 "w.bin", "w.bin", ".", "/", "/dev/zero", "/proc/self/mem",
                 "/dev/null", "sub/w.bin", "w.bin\x00junk", "x" * 5000,
                 "~/w.bin", "C:\\w.bin", "w.bin/"]


def mut_external(m, rng, ctx):
    t = pick(rng, m.graph.initializer)
    if t is None:
        return None
    set_raw(t)
    data = t.raw_data
    nbytes = len(data)
    loc = rng.choice(EXT_LOCATIONS)
    off = rng.choice([None, None, 0, 16, -1, 2**63 - 1, 2**62, "abc", "",
                      "1e3", " 16", "0x10", "99999999999999999999999"])
    ln = rng.choice([None, nbytes, nbytes, 0, -1, nbytes + 1, 2**63 - 1,
                     "xyz", 2**62])
    keep_raw = rng.random() < 0.1
    if not keep_raw:
        t.ClearField("raw_data")
    t.data_location = rng.choice([TensorProto.EXTERNAL] * 9 + [TensorProto.DEFAULT])
    entries = [("location", loc)]
    if off is not None:
        entries.append(("offset", str(off)))
    if ln is not None:
        entries.append(("length", str(ln)))
    extra = rng.choice([None, None, None, "dup_location", "unknown", "checksum",
                        "no_location"])
    if extra == "dup_location":
        entries.append(("location", rng.choice(EXT_LOCATIONS)))
    elif extra == "unknown":
        entries.append(("bogus", "1"))
    elif extra == "checksum":
        entries.append(("checksum", "deadbeef"))
    elif extra == "no_location":
        entries = entries[1:]
    for k, v in entries:
        e = t.external_data.add()
        e.key, e.value = k, v
    desc = "initializer %r external %s" % (
        t.name, ", ".join("%s=%s" % (k, short(v, 30)) for k, v in entries))
    if t.data_location != TensorProto.EXTERNAL:
        desc += " (data_location DEFAULT)"
    if keep_raw:
        desc += " (raw_data kept)"
    if loc.startswith("w.bin") or loc == "sub/w.bin":
        size = rng.choice([0, nbytes, nbytes // 2, nbytes + 64, 16 + nbytes])
        ctx["files"]["sub/w.bin" if loc == "sub/w.bin" else "w.bin"] = \
            bytes(size)
        desc += " (w.bin has %d bytes)" % size
    return desc


MUTATORS = [
    (6, mut_int_attr), (6, mut_ints_attr), (2, mut_float_attr),
    (2, mut_string_attr), (4, mut_attr_type), (6, mut_dims),
    (6, mut_init_data), (8, mut_const_input), (6, mut_names), (5, mut_nodes),
    (3, mut_opset), (2, mut_ir), (3, mut_graph_io), (4, mut_external),
]


def mutate_bytes(data, rng):
    data = bytearray(data)
    descs = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        how = rng.choice(["flip", "flip", "truncate", "insert", "delete",
                          "dupchunk", "ff", "append", "varint"])
        if not data:
            data = bytearray(b"\x08")
        p = rng.randrange(len(data))
        if how == "flip":
            k = rng.choice([1, 1, 4, 16])
            for _ in range(k):
                q = rng.randrange(len(data))
                data[q] ^= 1 << rng.randrange(8)
            descs.append("%d bit flip(s)" % k)
        elif how == "truncate":
            del data[p:]
            descs.append("truncated to %d bytes" % p)
        elif how == "insert":
            k = rng.choice([1, 3, 10])
            data[p:p] = bytes(rng.randrange(256) for _ in range(k))
            descs.append("%d random bytes inserted at %d" % (k, p))
        elif how == "delete":
            k = rng.choice([1, 2, 8, 64])
            del data[p:p + k]
            descs.append("%d bytes deleted at %d" % (k, p))
        elif how == "dupchunk":
            k = rng.choice([2, 16, 200])
            data[p:p] = data[p:p + k]
            descs.append("%d bytes at %d duplicated" % (k, p))
        elif how == "ff":
            data[p] = 0xff
            descs.append("byte %d -> 0xff" % p)
        elif how == "append":
            data += bytes(rng.randrange(256) for _ in range(rng.choice([1, 5, 40])))
            descs.append("garbage appended")
        else:
            data[p:p + 1] = b"\xff\xff\xff\xff\x0f"
            descs.append("huge varint at %d" % p)
    return bytes(data), "bytes: " + ", ".join(descs)


TEXT_TOKENS = ["<", ">", "(", ")", "[", "]", "{", "}", ",", "=", ":", "\"",
               "-1", "0", "99999999999999999999", "float", "int64", "string",
               "\n", "#", "Relu", "x", "\x00", "\xff", "1e999", "nan", "[]",
               "<>", "float[]", "<value = int64 {}>"]


def mutate_text(text, rng):
    descs = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        how = rng.choice(["number", "number", "delete_line", "dup_line",
                          "delete_char", "insert_token", "truncate", "swap_lines"])
        lines = text.split("\n")
        if how == "number":
            nums = list(re.finditer(r"-?\d+(\.\d+)?", text))
            if not nums:
                continue
            mt = rng.choice(nums)
            new = str(rng.choice(SPECIAL_INTS + ["1.5", "-0", "1e40", "1e999",
                                                 "99999999999999999999",
                                                 ".5", "-", "0x10", "1e"]))
            text = text[:mt.start()] + new + text[mt.end():]
            descs.append("number %r at %d -> %s" % (mt.group(), mt.start(), new))
        elif how == "delete_line" and len(lines) > 1:
            i = rng.randrange(len(lines))
            descs.append("line %d %s deleted" % (i + 1, short(lines[i].strip())))
            del lines[i]
            text = "\n".join(lines)
        elif how == "dup_line":
            i = rng.randrange(len(lines))
            lines.insert(i, lines[i])
            text = "\n".join(lines)
            descs.append("line %d %s duplicated" % (i + 1, short(lines[i].strip())))
        elif how == "swap_lines" and len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
            descs.append("lines %d and %d swapped" % (i + 1, j + 1))
        elif how == "delete_char" and text:
            p = rng.randrange(len(text))
            descs.append("char %r at %d deleted" % (text[p], p))
            text = text[:p] + text[p + 1:]
        elif how == "insert_token":
            p = rng.randrange(len(text) + 1)
            tok = rng.choice(TEXT_TOKENS)
            text = text[:p] + tok + text[p:]
            descs.append("%r inserted at %d" % (tok, p))
        elif how == "truncate":
            p = rng.randrange(len(text) + 1)
            text = text[:p]
            descs.append("truncated at %d" % p)
    return text, "text: " + (", ".join(descs) or "unchanged")


def make_mutant(seeds, seed, index):
    """Mutant `index` of run `seed`: (name, filename, bytes, description,
    extra files)."""
    rng = random.Random("pcc-fuzz/%d/%d" % (seed, index))
    if rng.random() < 0.06:
        sname, text = rng.choice(TEXT_SEEDS)
        text, desc = mutate_text(text, rng)
        return ("m%05d-%s" % (index, sname), "model.onnxtxt",
                text.encode("utf-8", "surrogateescape"), desc, {})
    # The four composite seeds are picked 8x as often as each single op.
    sname, base = rng.choices(seeds, [8 if i < 4 else 1
                                      for i in range(len(seeds))])[0]
    m = onnx.ModelProto()
    m.CopyFrom(base)
    ctx = {"files": {}}
    descs = []
    byte_level = rng.random() < 0.1
    # Byte-level mutants get zero or one model-level mutation first.
    want = rng.choice([0, 0, 1]) if byte_level else \
        rng.choice([1, 1, 1, 1, 2, 2, 3])
    weights = [w for w, _ in MUTATORS]
    tries = 0
    while len(descs) < want and tries < 40:
        tries += 1
        fn = rng.choices([f for _, f in MUTATORS], weights)[0]
        try:
            d = fn(m, rng, ctx)
        except (ValueError, TypeError, OverflowError, IndexError) as e:
            # A mutator bug must not stop the run; the half-mutated model is
            # still a (deterministic) input.
            d = "%s raised %s: %s" % (fn.__name__, type(e).__name__, e)
        if d:
            descs.append(d)
    data = m.SerializeToString()
    if byte_level:
        data, d = mutate_bytes(data, rng)
        descs.append(d)
    return ("m%05d-%s" % (index, sname), "model.onnx", data,
            "; ".join(descs) or "(no mutation applied)", ctx["files"])


# --------------------------------------------------------------------------
# Running pcc and judging the result
# --------------------------------------------------------------------------

CRASH_MARKERS = ["LLVM ERROR", "Stack dump", "PLEASE submit a bug report",
                 "terminate called", "Assertion", "Aborted", "Segmentation",
                 "libprotobuf FATAL", "UNREACHABLE", "core dumped",
                 "std::bad_alloc", "AddressSanitizer", "runtime error:"]
FRAME_RE = re.compile(r"^\s*#\d+\s+0x[0-9a-fA-F]+\s+(.*)$")
SKIP_FRAME = re.compile(r"llvm::sys::|PrintStackTrace|std::__throw|SignalHandler|"
                        r"__restore_rt|libc\.so|\babort\b|\braise\b|"
                        r"pthread_kill|gsignal|__assert|libstdc\+\+|"
                        r"__cxa_|std::terminate|_Unwind|llvm_unreachable|"
                        r"report_fatal_error|report_bad_alloc|ld-linux")


def first_frame(stderr):
    """The first frame of an LLVM stack dump that is pcc's or a library's
    own code (not the signal handler, libc or the C++ runtime), without its
    arguments: a stable key for grouping."""
    for line in stderr.splitlines():
        mt = FRAME_RE.match(line)
        if not mt or SKIP_FRAME.search(mt.group(1)):
            continue
        fr = re.sub(r"\s*\([^()]*\+0x[0-9a-fA-F]+\)$", "", mt.group(1).strip())
        fr = re.sub(r"\s+\S+:\d+(:\d+)?$", "", fr)  # "func file:line:col"
        if not fr:
            continue  # no symbol
        depth = 0
        out = []
        for ch in fr:  # drop argument and template argument lists
            if ch in "(<":
                depth += 1
            elif ch in ")>":
                depth = max(0, depth - 1)
            elif depth == 0:
                out.append(ch)
        return "".join(out).strip() or fr
    return None


def uncaught(stderr):
    mt = re.search(r"terminate called after throwing an instance of '([^']*)'"
                   r"(?:\s*what\(\):\s*(.*))?", stderr)
    if not mt:
        return None
    what = re.sub(r"\d+", "N", (mt.group(2) or "").strip())[:80]
    return "uncaught %s%s" % (mt.group(1), (": " + what) if what else "")


def printable(s):
    return all(ch == "\t" or (" " <= ch and ch != "\x7f") for ch in s)


def judge(rc, timed_out, out, err):
    """-> (outcome, symptom): outcome 'imported' | 'error' | 'failure'."""
    try:
        err_s = err.decode("utf-8")
        utf8 = True
    except UnicodeDecodeError:
        err_s = err.decode("utf-8", "replace")
        utf8 = False
    lines = err_s.splitlines()
    marker = next((mk for mk in CRASH_MARKERS if mk in err_s), None)
    frame = first_frame(err_s)
    suffix = (" in " + frame) if frame else ""
    exc = uncaught(err_s)
    if exc:
        suffix = " (%s)%s" % (exc, suffix)
    if timed_out:
        return "failure", "timeout" + suffix
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = "signal %d" % -rc
        return "failure", name + suffix
    if rc >= 128:
        return "failure", "exit status %d%s" % (rc, suffix)
    if marker:
        first = next((l for l in lines if marker in l), marker)
        return "failure", "%s (exit %d): %s%s" % (
            marker, rc, re.sub(r"\d+", "N", first.strip())[:100], suffix)
    if rc == 0:
        if b"func.func @main" not in out:
            return "failure", "exit 0 without a module"
        return "imported", None
    problems = []
    if out:
        problems.append("stdout not empty")
    if len(lines) != 1:
        problems.append("%d stderr lines" % len(lines))
    if not lines or not lines[0].startswith("error:"):
        problems.append("stderr does not start with 'error:'")
    if not utf8 or not all(printable(l) for l in lines):
        problems.append("unprintable/invalid UTF-8 stderr")
    if problems:
        return "failure", "; ".join(problems)
    return "error", None


def run_pcc(pcc, folder, filename, timeout, mem_mb):
    cmd = [pcc, filename, "--emit=mlir"]
    if mem_mb:
        cmd = ["/bin/sh", "-c", 'ulimit -v %d; exec "$@"' % (mem_mb * 1024),
               "sh"] + cmd
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=folder, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    return proc.returncode, timed_out, out, err, time.monotonic() - start


def run_mutant(args, mutant):
    name, filename, data, desc, files = mutant
    folder = os.path.join(args.workdir, "run", name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    path = os.path.join(folder, filename)
    with open(path, "wb") as f:
        f.write(data)
    for rel, content in files.items():
        p = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(content)
    rc, timed_out, out, err, wall = run_pcc(args.pcc, folder, filename,
                                           args.timeout, args.mem_limit)
    outcome, symptom = judge(rc, timed_out, out, err)
    if outcome == "failure" and args.keep_failures:
        keep = os.path.join(args.workdir, "failures")
        os.makedirs(keep, exist_ok=True)
        ext = os.path.splitext(filename)[1]
        shutil.copyfile(path, os.path.join(keep, name + ext))
        for rel, content in files.items():
            with open(os.path.join(keep, name + "." + rel.replace("/", "_")),
                      "wb") as f:
                f.write(content)
        with open(os.path.join(keep, name + ".txt"), "w") as f:
            f.write("mutations: %s\nsymptom: %s\nexit: %s\nwall: %.2fs\n"
                    "--- stderr ---\n%s" % (desc, symptom, rc, wall,
                                           err.decode("utf-8", "replace")))
    shutil.rmtree(folder, ignore_errors=True)
    return {"name": name, "desc": desc, "rc": "timeout" if timed_out else rc,
            "outcome": outcome, "symptom": symptom, "wall": wall,
            "stderr": err.decode("utf-8", "replace")}


def write_seeds(folder):
    os.makedirs(folder, exist_ok=True)
    seeds = build_seeds()
    for name, m in seeds:
        with open(os.path.join(folder, "seed-%s.onnx" % name), "wb") as f:
            f.write(m.SerializeToString())
    for name, text in TEXT_SEEDS:
        with open(os.path.join(folder, "seed-%s.onnxtxt" % name), "w") as f:
            f.write(text)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("pcc", nargs="?")
    ap.add_argument("workdir", nargs="?")
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--slow", type=float, default=2.0,
                    help="report runs longer than this (seconds)")
    ap.add_argument("--mem-limit", type=int, default=4096,
                    help="address-space limit for pcc in MiB (0: none)")
    ap.add_argument("--keep-failures", action="store_true")
    ap.add_argument("--list", action="store_true",
                    help="print the mutants without running pcc")
    ap.add_argument("--write-seeds", metavar="DIR",
                    help="write the seed models to DIR (a corpus for the "
                         "libFuzzer target, scripts/fuzz.sh) and stop")
    args = ap.parse_args()
    if args.write_seeds:
        return write_seeds(args.write_seeds)
    if not args.pcc or not args.workdir:
        ap.error("PCC and WORKDIR are required")
    args.pcc = os.path.abspath(args.pcc) if os.sep in args.pcc else \
        (shutil.which(args.pcc) or args.pcc)
    os.makedirs(args.workdir, exist_ok=True)
    if args.keep_failures:
        shutil.rmtree(os.path.join(args.workdir, "failures"), ignore_errors=True)

    seeds = build_seeds()
    mutants = [make_mutant(seeds, args.seed, i) for i in range(args.count)]
    if args.list:
        for name, _, data, desc, _ in mutants:
            print("%s\t%d bytes\t%s" % (name, len(data), desc))
        return 0

    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        for r in ex.map(lambda mu: run_mutant(args, mu), mutants):
            results.append(r)
    shutil.rmtree(os.path.join(args.workdir, "run"), ignore_errors=True)

    with open(os.path.join(args.workdir, "results.tsv"), "w") as f:
        f.write("name\toutcome\trc\twall_s\tsymptom\tmutations\tstderr_first_line\n")
        for r in results:
            first = (r["stderr"].splitlines() or [""])[0]
            f.write("\t".join(str(x).replace("\t", " ").replace("\n", "\\n")
                              for x in (r["name"], r["outcome"], r["rc"],
                                        "%.3f" % r["wall"], r["symptom"] or "",
                                        r["desc"], first[:300])) + "\n")

    failures = [r for r in results if r["outcome"] == "failure"]
    for r in failures:
        print("FAIL %s: %s" % (r["name"], r["symptom"]))
        print("  mutations: %s" % r["desc"])
        print("  exit: %s, %.2fs" % (r["rc"], r["wall"]))
        for line in r["stderr"].splitlines()[:4]:
            print("  | " + line[:200])
    if failures:
        groups = collections.OrderedDict()
        for r in failures:
            groups.setdefault(r["symptom"], []).append(r)
        print("failure classes:")
        for sym, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            best = min(rs, key=lambda r: (r["desc"].count(";"), len(r["desc"])))
            print("  %4d x %s\n         e.g. %s: %s" % (len(rs), sym, best["name"],
                                                      best["desc"]))
    slow = [r for r in results if r["wall"] > args.slow and r["rc"] != "timeout"]
    for r in sorted(slow, key=lambda r: -r["wall"]):
        print("SLOW %s: %.2fs (%s): %s" % (r["name"], r["wall"], r["outcome"],
                                           r["desc"]))
    n_imp = sum(r["outcome"] == "imported" for r in results)
    n_err = sum(r["outcome"] == "error" for r in results)
    print("fuzz: %d mutants: %d imported, %d clean errors, %d failures"
          % (len(results), n_imp, n_err, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

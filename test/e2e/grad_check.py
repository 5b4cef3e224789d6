#!/usr/bin/env python3
"""Checks pcc's gradient rules against finite differences, op by op.

Usage: grad_check.py WORKDIR --mpirun CMD [CASE...]

Each case is one ONNX op whose first float operand is a trainable
initializer W (other operands are frozen initializers or constants), with
loss = ReduceSum(op(...) * R) for a fixed random R. pcc compiles the
training step with SGD at lr 1, runs one step and saves W: W - W_saved is
pcc's gradient. The reference is a central finite difference of the same
loss in float64 (numpy), at every element of W. Prints one line per case:
  Mul: PASS max_abs_err=1.2e-07
Gradients must agree to rtol 1e-3, atol 1e-4 (f32 rounding against f64).
"""
import argparse
import os
import shlex
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(0)


def rand(*shape, positive=False):
    a = RNG.standard_normal(shape)
    return np.abs(a) + 0.5 if positive else a


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def batch_norm(x, g, b, mean, var, eps=1e-5):
    """Per channel (axis 1) with the given statistics."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return ((x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) *
            g.reshape(shape) + b.reshape(shape))


def batch_norm_train(x, g, b, eps=1e-5):
    """With the batch's own statistics (biased variance)."""
    axes = (0,) + tuple(range(2, x.ndim))
    return batch_norm(x, g, b, x.mean(axis=axes), x.var(axis=axes), eps)


def erf(x):
    from math import erf as e
    return np.vectorize(e)(x)


def conv2d(x, w, strides, pads, dilations, group=1):
    """ONNX Conv (NCHW) in float64."""
    if group > 1:
        xs, ws = np.split(x, group, axis=1), np.split(w, group, axis=0)
        return np.concatenate([conv2d(a, b, strides, pads, dilations)
                               for a, b in zip(xs, ws)], axis=1)
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    ho = (h - (kh - 1) * dh - 1) // sh + 1
    wo = (wd - (kw - 1) * dw - 1) // sw + 1
    y = np.zeros((n, o, ho, wo))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i * dh:i * dh + (ho - 1) * sh + 1:sh,
                      j * dw:j * dw + (wo - 1) * sw + 1:sw]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return y


def pool2d(x, kernel, strides, pads, dilations, kind, count_pad=False,
           ceil=False):
    """Max or average pooling of an NCHW array (ONNX's floor mode, or
    ceil mode: the last windows reach past the padded input, and an
    average counts only what lies within it)."""
    fill = -np.inf if kind == "max" else 0.0
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    padded = [x.shape[2 + i] + pads[i] + pads[i + 2] for i in range(2)]
    out = [-(-(padded[i] - spans[i]) // strides[i]) + 1 if ceil
           else (padded[i] - spans[i]) // strides[i] + 1 for i in range(2)]
    extra = [max(0, (out[i] - 1) * strides[i] + spans[i] - padded[i])
             for i in range(2)]
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2] + extra[0]),
                    (pads[1], pads[3] + extra[1])), constant_values=fill)
    inside = np.pad(np.ones(x.shape[2:]), ((pads[0], pads[2] + extra[0]),
                                           (pads[1], pads[3] + extra[1])))
    counted = np.pad(np.ones(padded), ((0, extra[0]), (0, extra[1])))
    y = np.zeros(x.shape[:2] + tuple(out), dtype=xp.dtype)
    for i in range(out[0]):
        for j in range(out[1]):
            r = slice(i * strides[0], i * strides[0] + spans[0], dilations[0])
            c = slice(j * strides[1], j * strides[1] + spans[1], dilations[1])
            window = xp[:, :, r, c]
            if kind == "max":
                y[:, :, i, j] = window.max((2, 3))
            else:
                n = counted[r, c].sum() if count_pad else inside[r, c].sum()
                y[:, :, i, j] = window.sum((2, 3)) / n
    return y


def attention(q, k, v, mask):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = np.where(mask, s, -np.inf)
    return softmax(s, -1) @ v


# name: (op, attributes, operands (W first), numpy function of them,
#        opset). Operands other than W are frozen initializers.
CAUSAL = np.tril(np.ones((4, 4), bool))
CASES = {
    "Add": ("Add", {}, [rand(3, 4), rand(4)], lambda w, b: w + b),
    "AddBroadcastW": ("Add", {}, [rand(1, 4), rand(3, 4)], lambda w, b: w + b),
    "Sub": ("Sub", {}, [rand(3, 4), rand(3, 4)], lambda w, b: w - b),
    "SubRight": ("Sub", {}, [rand(3, 1), rand(3, 4)], lambda w, b: b - w, "swap"),
    "Mul": ("Mul", {}, [rand(3, 4), rand(3, 1)], lambda w, b: w * b),
    "Div": ("Div", {}, [rand(3, 4), rand(4, positive=True)], lambda w, b: w / b),
    "DivDenominator": ("Div", {}, [rand(3, 4, positive=True), rand(3, 4)],
                       lambda w, a: a / w, "swap"),
    "Pow": ("Pow", {}, [rand(3, 4, positive=True), np.array(3.0)],
            lambda w, e: w ** e),
    "PowExponent": ("Pow", {}, [rand(3, 4) * 0.5, rand(3, 4, positive=True)],
                    lambda w, a: a ** w, "swap"),
    "Neg": ("Neg", {}, [rand(3, 4)], lambda w: -w),
    "Abs": ("Abs", {}, [rand(3, 4)], np.abs),
    "Exp": ("Exp", {}, [rand(3, 4)], np.exp),
    "Log": ("Log", {}, [rand(3, 4, positive=True)], np.log),
    "Sqrt": ("Sqrt", {}, [rand(3, 4, positive=True)], np.sqrt),
    "Reciprocal": ("Reciprocal", {}, [rand(3, 4, positive=True)],
                   lambda w: 1 / w),
    "Tanh": ("Tanh", {}, [rand(3, 4)], np.tanh),
    "Erf": ("Erf", {}, [rand(3, 4)], erf),
    "Sigmoid": ("Sigmoid", {}, [rand(3, 4)], lambda w: 1 / (1 + np.exp(-w))),
    "Relu": ("Relu", {}, [rand(3, 4)], lambda w: np.maximum(w, 0)),
    "Sin": ("Sin", {}, [rand(3, 4)], np.sin),
    "Cos": ("Cos", {}, [rand(3, 4)], np.cos),
    "LeakyRelu": ("LeakyRelu", {"alpha": 0.1}, [rand(3, 4)],
                  lambda w: np.where(w > 0, w, 0.1 * w)),
    "Clip": ("Clip", {}, [rand(3, 4), np.array(-0.5), np.array(0.5)],
             lambda w, lo, hi: np.clip(w, lo, hi)),
    "Max": ("Max", {}, [rand(3, 4), rand(3, 4)], np.maximum),
    "Min": ("Min", {}, [rand(3, 4), rand(4)], np.minimum),
    "Where": ("Where", {}, [rand(3, 4), rand(3, 4)],
              lambda w, b: np.where(CAUSAL[:3], w, b), "where"),
    "MatMul": ("MatMul", {}, [rand(2, 3, 4), rand(4, 5)], lambda w, b: w @ b),
    "MatMulWeight": ("MatMul", {}, [rand(4, 5), rand(2, 3, 4)],
                     lambda w, a: a @ w, "swap"),
    "MatMulBatched": ("MatMul", {}, [rand(2, 3, 4), rand(1, 4, 5)],
                      lambda w, b: w @ b),
    "MatMulVector": ("MatMul", {}, [rand(4), rand(2, 4, 5)], lambda w, b: w @ b),
    "Gemm": ("Gemm", {"alpha": 0.5, "beta": 2.0}, [rand(3, 4), rand(4, 5), rand(5)],
             lambda w, b, c: 0.5 * w @ b + 2.0 * c),
    "GemmTransA": ("Gemm", {"transA": 1}, [rand(4, 3), rand(4, 5)],
                   lambda w, b: w.T @ b),
    "GemmTransB": ("Gemm", {"transB": 1, "alpha": 2.0}, [rand(5, 4), rand(3, 4)],
                   lambda w, a: 2.0 * a @ w.T, "swap"),
    "GemmTransAB": ("Gemm", {"transA": 1, "transB": 1}, [rand(5, 4), rand(4, 3)],
                    lambda w, a: a.T @ w.T, "swap"),
    "GemmBias": ("Gemm", {"beta": 0.5}, [rand(3, 1), rand(3, 4), rand(4, 5)],
                 lambda w, a, b: a @ b + 0.5 * w, "bias"),
    "Softmax": ("Softmax", {"axis": -1}, [rand(3, 4)], lambda w: softmax(w, -1)),
    "SoftmaxAxis0": ("Softmax", {"axis": 0}, [rand(3, 4)],
                     lambda w: softmax(w, 0)),
    "LogSoftmax": ("LogSoftmax", {"axis": -1}, [rand(3, 4)],
                   lambda w: np.log(softmax(w, -1))),
    "ReduceSum": ("ReduceSum", {"keepdims": 0}, [rand(3, 4), np.array([1])],
                  lambda w, a: w.sum(1)),
    "ReduceMean": ("ReduceMean", {"axes": [0], "keepdims": 1}, [rand(3, 4)],
                   lambda w: w.mean(0, keepdims=True)),
    "ReduceMax": ("ReduceMax", {"axes": [1], "keepdims": 0}, [rand(3, 4)],
                  lambda w: w.max(1)),
    "ReduceMin": ("ReduceMin", {"axes": [0], "keepdims": 1}, [rand(3, 4)],
                  lambda w: w.min(0, keepdims=True)),
    "ReduceProd": ("ReduceProd", {"axes": [1], "keepdims": 0},
                   [rand(3, 4, positive=True)], lambda w: w.prod(1)),
    "Reshape": ("Reshape", {}, [rand(3, 4), np.array([2, 6])],
                lambda w, s: w.reshape(2, 6)),
    "Transpose": ("Transpose", {"perm": [2, 0, 1]}, [rand(2, 3, 4)],
                  lambda w: w.transpose(2, 0, 1)),
    "Expand": ("Expand", {}, [rand(3, 1), np.array([2, 3, 4])],
               lambda w, s: np.broadcast_to(w, (2, 3, 4))),
    "Concat": ("Concat", {"axis": 1}, [rand(3, 2), rand(3, 3)],
               lambda w, b: np.concatenate([w, b], 1)),
    "Split": ("Split", {"axis": 1}, [rand(3, 4), np.array([1, 3])],
              lambda w, s: w[:, 1:] * 1.0, "split"),
    "Slice": ("Slice", {}, [rand(4, 5), np.array([1, 1]), np.array([3, 4]),
                            np.array([0, 1])],
              lambda w, s, e, a: w[1:3, 1:4]),
    "SliceStep": ("Slice", {}, [rand(7, 8), np.array([1, 0]),
                                np.array([7, 8]), np.array([0, 1]),
                                np.array([2, 3])],
                  lambda w, s, e, a, st: w[1:7:2, 0:8:3]),
    "SliceReverse": ("Slice", {}, [rand(5, 7), np.array([-1, 5]),
                                   np.array([-100, 0]), np.array([0, 1]),
                                   np.array([-1, -2])],
                     lambda w, s, e, a, st: w[::-1, 5:0:-2]),
    "Gather": ("Gather", {"axis": 0}, [rand(5, 3), np.array([[0, 2], [2, 4]])],
               lambda w, i: w[i]),
    "GatherNegative": ("Gather", {"axis": 0}, [rand(5, 3), np.array([-1, 1, -1])],
                       lambda w, i: w[i]),
    "GatherAxis1": ("Gather", {"axis": 1}, [rand(2, 5, 3), np.array(0)],
                    lambda w, i: w[:, 0]),
    "GatherAxis2": ("Gather", {"axis": -1}, [rand(2, 3, 4), np.array([3, 0, 3])],
                    lambda w, i: w[:, :, [3, 0, 3]]),
    "Trilu": ("Trilu", {"upper": 0}, [rand(4, 4), np.array(1)],
              lambda w, k: np.tril(w, 1)),
    "LayerNorm": ("LayerNormalization", {"axis": -1, "epsilon": 1e-5},
                  [rand(3, 4), rand(4), rand(4)], layer_norm, "opset17"),
    "LayerNormScale": ("LayerNormalization", {"axis": -1, "epsilon": 1e-5},
                       [rand(4), rand(3, 4), rand(4)],
                       lambda g, x, b: layer_norm(x, g, b), "scale,opset17"),
    "BatchNorm": ("BatchNormalization", {"epsilon": 1e-5},
                  [rand(2, 3, 2, 2), rand(3), rand(3), rand(3),
                   rand(3, positive=True)], batch_norm),
    "BatchNormScale": ("BatchNormalization", {"epsilon": 1e-5},
                       [rand(3), rand(2, 3, 2, 2), rand(3), rand(3),
                        rand(3, positive=True)],
                       lambda g, x, b, m, v: batch_norm(x, g, b, m, v), "swap"),
    "BatchNormTraining": ("BatchNormalization",
                          {"epsilon": 1e-5, "training_mode": 1},
                          [rand(4, 3, 2), rand(3), rand(3), rand(3),
                           rand(3, positive=True)],
                          lambda x, g, b, m, v: batch_norm_train(x, g, b)),
    "Conv": ("Conv", {"strides": [2, 1], "pads": [1, 0, 0, 1],
                      "dilations": [1, 2]},
             [rand(3, 2, 3, 2), rand(2, 2, 7, 6), rand(3)],
             lambda w, x, b: conv2d(x, w, (2, 1), (1, 0, 0, 1), (1, 2)) +
             b[None, :, None, None], "scale"),
    "ConvInput": ("Conv", {"strides": [2, 2], "pads": [1, 1, 1, 1]},
                  [rand(2, 2, 5, 6), rand(3, 2, 3, 3)],
                  lambda x, w: conv2d(x, w, (2, 2), (1, 1, 1, 1), (1, 1))),
    "ConvInputDilated": ("Conv", {"strides": [1, 2], "pads": [0, 1, 2, 0],
                                  "dilations": [2, 1]},
                         [rand(2, 2, 7, 6), rand(3, 2, 2, 3)],
                         lambda x, w: conv2d(x, w, (1, 2), (0, 1, 2, 0),
                                             (2, 1))),
    "ConvPatches": ("Conv", {"strides": [4, 4]},
                    [rand(4, 3, 4, 4), rand(2, 3, 8, 8)],
                    lambda w, x: conv2d(x, w, (4, 4), (0, 0, 0, 0), (1, 1)),
                    "swap"),
    "ConvGrouped": ("Conv", {"strides": [2, 1], "pads": [1, 1, 0, 1],
                             "group": 2},
                    [rand(6, 2, 3, 3), rand(2, 4, 6, 5)],
                    lambda w, x: conv2d(x, w, (2, 1), (1, 1, 0, 1), (1, 1), 2),
                    "swap"),
    "ConvGroupedInput": ("Conv", {"strides": [2, 2], "pads": [1, 0, 1, 1],
                                  "dilations": [1, 2], "group": 2},
                         [rand(2, 4, 7, 8), rand(6, 2, 3, 2)],
                         lambda x, w: conv2d(x, w, (2, 2), (1, 0, 1, 1),
                                             (1, 2), 2)),
    "ConvDepthwise": ("Conv", {"pads": [1, 1, 1, 1], "group": 3},
                      [rand(3, 1, 3, 3), rand(2, 3, 5, 4)],
                      lambda w, x: conv2d(x, w, (1, 1), (1, 1, 1, 1), (1, 1),
                                          3), "swap"),
    "ConvDepthwiseInput": ("Conv", {"strides": [2, 2], "pads": [1, 1, 1, 1],
                                    "group": 3},
                           [rand(2, 3, 6, 5), rand(6, 1, 3, 3)],
                           lambda x, w: conv2d(x, w, (2, 2), (1, 1, 1, 1),
                                               (1, 1), 3)),
    "MaxPool": ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2],
                            "pads": [1, 1, 1, 1]},
                [rand(2, 3, 7, 6)],
                lambda w: pool2d(w, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1),
                                 "max")),
    "MaxPoolDilated": ("MaxPool", {"kernel_shape": [2, 3], "strides": [1, 2],
                                   "pads": [0, 1, 1, 0], "dilations": [2, 1]},
                       [rand(2, 2, 7, 8)],
                       lambda w: pool2d(w, (2, 3), (1, 2), (0, 1, 1, 0),
                                        (2, 1), "max")),
    "AveragePool": ("AveragePool", {"kernel_shape": [3, 2], "strides": [2, 1],
                                    "pads": [1, 0, 1, 1]},
                    [rand(2, 3, 7, 5)],
                    lambda w: pool2d(w, (3, 2), (2, 1), (1, 0, 1, 1), (1, 1),
                                     "average")),
    "AveragePoolCountPad": ("AveragePool", {"kernel_shape": [2, 2],
                                            "strides": [2, 2],
                                            "pads": [1, 1, 0, 0],
                                            "count_include_pad": 1},
                            [rand(2, 2, 5, 6)],
                            lambda w: pool2d(w, (2, 2), (2, 2), (1, 1, 0, 0),
                                             (1, 1), "average", True)),
    "MaxPoolCeil": ("MaxPool", {"kernel_shape": [3, 2], "strides": [2, 2],
                                "pads": [1, 0, 0, 0], "ceil_mode": 1},
                    [rand(2, 2, 6, 7)],
                    lambda w: pool2d(w, (3, 2), (2, 2), (1, 0, 0, 0), (1, 1),
                                     "max", ceil=True)),
    "AveragePoolCeil": ("AveragePool", {"kernel_shape": [3, 3],
                                        "strides": [2, 2], "ceil_mode": 1},
                        [rand(2, 2, 6, 7)],
                        lambda w: pool2d(w, (3, 3), (2, 2), (0, 0, 0, 0),
                                         (1, 1), "average", ceil=True)),
    "AveragePoolCeilCountPad": ("AveragePool", {"kernel_shape": [3, 3],
                                                "strides": [2, 2],
                                                "pads": [1, 1, 1, 0],
                                                "ceil_mode": 1,
                                                "count_include_pad": 1},
                                [rand(2, 2, 7, 6)],
                                lambda w: pool2d(w, (3, 3), (2, 2),
                                                 (1, 1, 1, 0), (1, 1),
                                                 "average", True, True)),
    "GlobalAveragePool": ("GlobalAveragePool", {}, [rand(2, 3, 4, 5)],
                          lambda w: w.mean((2, 3), keepdims=True)),
    "SoftmaxCrossEntropy": ("SoftmaxCrossEntropyLoss", {},
                            [rand(4, 5), np.array([0, 3, 4, 1])],
                            lambda w, t: -np.log(softmax(w, 1))[
                                np.arange(4), t].mean(), "scalar"),
}
# Attention, as exporters write it (raised to pcc.attention): query, key
# and value each the trained operand in turn.
for i, which in enumerate(["Query", "Key", "Value"]):
    CASES["Attention" + which] = ("attention", {}, [rand(2, 4, 3)] * 1,
                                  None, f"attention{i}")


def const(name, a):
    dtype = np.int64 if a.dtype.kind in "iu" else np.float32
    return numpy_helper.from_array(np.asarray(a, dtype), name)


def build(case):
    """The ONNX model of a case, its W, and the loss in float64 numpy."""
    op, attrs, operands, fn, *flags = CASES[case]
    flags = flags[0].split(",") if flags else []
    opset = 17 if "opset17" in flags else 14
    r_shape = None
    inits = [const("W", operands[0])]
    nodes = []
    if op == "attention":
        which = int(flags[0][-1])
        qkv = [rand(2, 4, 3), rand(2, 4, 3), rand(2, 4, 3)]
        names = ["W" if j == which else f"A{j}" for j in range(3)]
        inits = [const(n, a) for n, a in zip(names, qkv)]
        inits.append(numpy_helper.from_array(CAUSAL, "mask"))
        inits.append(const("scale", np.array(np.sqrt(3.0))))
        inits.append(const("ninf", np.array(-np.inf)))
        nodes += [
            helper.make_node("Transpose", [names[1]], ["kt"], perm=[0, 2, 1]),
            helper.make_node("MatMul", [names[0], "kt"], ["s0"]),
            helper.make_node("Div", ["s0", "scale"], ["s1"]),
            helper.make_node("Where", ["mask", "s1", "ninf"], ["s2"]),
            helper.make_node("Softmax", ["s2"], ["p"], axis=-1),
            helper.make_node("MatMul", ["p", names[2]], ["Y"]),
        ]
        w0 = qkv[which]

        def loss_of(w):
            args = list(qkv)
            args[which] = w
            return attention(*args, CAUSAL)
        out_shape = (2, 4, 3)
    else:
        names = ["W"]
        for j, a in enumerate(operands[1:]):
            names.append(f"A{j}")
            inits.append(const(f"A{j}", a))
        if "swap" in flags:
            names[0], names[1] = names[1], names[0]
        if "bias" in flags:
            names = [names[1], names[2], names[0]]
        if "scale" in flags:
            names = [names[1], names[0], names[2]]
        if "where" in flags:
            inits.append(numpy_helper.from_array(CAUSAL[:3], "cond"))
            names = ["cond"] + names
        outs = ["Y"] if "split" not in flags else ["Y0", "Y"]
        nodes.append(helper.make_node(op, names, outs, **attrs))
        w0 = operands[0]

        def loss_of(w):
            return fn(w, *operands[1:])
        out_shape = np.shape(loss_of(w0))
    R = rand(*out_shape) if out_shape else np.array(1.0)
    inits.append(const("R", R))
    nodes += [helper.make_node("Mul", ["Y", "R"], ["YR"]),
              helper.make_node("ReduceSum", ["YR"], ["loss"], keepdims=0)]
    graph = helper.make_graph(
        nodes, case, [], [helper.make_tensor_value_info("loss",
                                                        TensorProto.FLOAT, [])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    w0 = np.asarray(w0, np.float32).astype(np.float64)

    def total(w):
        return float(np.sum(loss_of(w) * R))
    return model, w0, total


def finite_difference(f, w, h=1e-6):
    g = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        up, down = w.copy(), w.copy()
        up[i] += h
        down[i] -= h
        g[i] = (f(up) - f(down)) / (2 * h)
    return g


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--mpirun", required=True)
    p.add_argument("cases", nargs="*")
    args = p.parse_intermixed_args()
    mpirun = shlex.split(args.mpirun)
    batches = os.path.join(args.workdir, "batches", "batch_0")
    os.makedirs(batches, exist_ok=True)
    failed = 0
    cases = args.cases or list(CASES)
    for case in cases:
        d = os.path.join(args.workdir, case)
        os.makedirs(d, exist_ok=True)
        model, w0, total = build(case)
        path = os.path.join(d, "model.onnx")
        onnx.save(model, path)
        # (Float scalars are inlined as constants: nothing to freeze.)
        frozen = [i.name for i in model.graph.initializer if i.name != "W"
                  and i.data_type == TensorProto.FLOAT and len(i.dims) > 0]
        compile_ = subprocess.run(
            ["pcc", path, "-o", os.path.join(d, "out"), "--quiet", "--train",
             "--optimizer", "sgd", "--lr", "1"] +
            (["--freeze", ",".join(frozen)] if frozen else []),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if compile_.returncode:
            print(f"{case}: FAIL {compile_.stdout.strip()}", flush=True)
            failed += 1
            continue
        saved = os.path.join(d, "saved")
        run = subprocess.run(
            mpirun + ["-np", "1", os.path.join(d, "out", "model"), "--train",
                      os.path.dirname(batches), "--steps", "1", "--save",
                      saved], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, timeout=120)
        if run.returncode:
            print(f"{case}: FAIL {run.stdout.strip()}", flush=True)
            failed += 1
            continue
        w1 = numpy_helper.to_array(onnx.load_tensor(os.path.join(saved, "W.pb")))
        got = np.asarray(w0, np.float32) - w1
        want = finite_difference(total, w0)
        err = np.abs(got - want)
        ok = bool(np.all(err <= 1e-4 + 1e-3 * np.abs(want)))
        print(f"{case}: {'PASS' if ok else 'FAIL'} max_abs_err={err.max():.1e}",
              flush=True)
        if not ok:
            failed += 1
            print(f"  pcc:    {got.ravel()[:8]}\n  finite: {want.ravel()[:8]}",
                  flush=True)
    print(f"gradients: {len(cases)} cases, {failed} failed")


if __name__ == "__main__":
    main()

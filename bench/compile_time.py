#!/usr/bin/env python3
"""How long pcc takes to compile a model as it grows.

usage: /usr/bin/python3 bench/compile_time.py PCC WORKDIR [--ops N ...]
           [--repeats R] [--devices D]

Builds one ONNX model per requested op count (default 1000, 5000, 20000):
a stack of small transformer-style blocks (MatMul, Add, LayerNorm written out
as ReduceMean/Sub/Mul/Sqrt/Div, Reshape/Transpose, Softmax, Gelu as Erf
ops, residual adds), hidden size 16 so that weights are tiny and the time
is all compiler. Compiles each with `pcc MODEL -o DIR` R times and prints
the median wall time, pcc's own C++ compile time, and the generated source
size, as one JSON object per model.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 16
HEADS = 2
SEQ = 8


def block(i, x, nodes, inits, rng):
    """One transformer-style block: about 40 ONNX ops."""
    p = f"b{i}_"

    def weight(name, shape):
        name = p + name + str(len(inits))
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * 0.1).astype(np.float32), name))
        return name

    def ints(name, values):
        inits.append(numpy_helper.from_array(np.array(values, np.int64),
                                             p + name))
        return p + name

    def node(op, ins, **attrs):
        out = p + f"{op.lower()}{len(nodes)}"
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def layer_norm(v):
        mean = node("ReduceMean", [v], axes=[-1])
        d = node("Sub", [v, mean])
        var = node("ReduceMean", [node("Mul", [d, d])], axes=[-1])
        eps = weight("eps", [])
        return node("Div", [d, node("Sqrt", [node("Add", [var, eps])])])

    h = layer_norm(x)
    qkv = node("MatMul", [h, weight("wqkv", [HIDDEN, 3 * HIDDEN])])
    q, k, v = (node("Slice", [qkv, ints(f"s{j}", [j * HIDDEN]),
                              ints(f"e{j}", [(j + 1) * HIDDEN]),
                              ints(f"a{j}", [2])]) for j in range(3))
    shape = ints("heads_shape", [1, SEQ, HEADS, HIDDEN // HEADS])
    heads = [node("Transpose", [node("Reshape", [t, shape])], perm=[0, 2, 1, 3])
             for t in (q, k, v)]
    kt = node("Transpose", [heads[1]], perm=[0, 1, 3, 2])
    scores = node("Mul", [node("MatMul", [heads[0], kt]), weight("scale", [])])
    attn = node("MatMul", [node("Softmax", [scores], axis=-1), heads[2]])
    merged_shape = ints("merged_shape", [1, SEQ, HIDDEN])
    merged = node("Reshape", [node("Transpose", [attn], perm=[0, 2, 1, 3]),
                              merged_shape])
    x = node("Add", [x, node("MatMul", [merged, weight("wo", [HIDDEN, HIDDEN])])])
    h = layer_norm(x)
    up = node("Add", [node("MatMul", [h, weight("w1", [HIDDEN, 4 * HIDDEN])]),
                      weight("b1", [4 * HIDDEN])])
    gelu = node("Mul", [node("Mul", [up, weight("half", [])]),
                        node("Add", [node("Erf", [node("Mul", [up, weight("rs2", [])])]),
                                     weight("one", [])])])
    return node("Add", [x, node("MatMul", [gelu, weight("w2", [4 * HIDDEN, HIDDEN])])])


def make_model(target_ops, path):
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    x = "x"
    i = 0
    while len(nodes) < target_ops:
        x = block(i, x, nodes, inits, rng)
        i += 1
    graph = helper.make_graph(
        nodes, "deep", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                      [1, SEQ, HIDDEN])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, SEQ, HIDDEN])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.save(model, path)
    return len(nodes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pcc")
    ap.add_argument("workdir")
    ap.add_argument("--ops", type=int, nargs="+", default=[1000, 5000, 20000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--devices", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    for n in args.ops:
        path = os.path.join(args.workdir, f"deep{n}.onnx")
        ops = make_model(n, path)
        walls, cxx = [], []
        out = os.path.join(args.workdir, f"deep{n}.out")
        for _ in range(args.repeats):
            t0 = time.monotonic()
            proc = subprocess.run([args.pcc, path, "-o", out, "--devices",
                                   str(args.devices)], capture_output=True,
                                  text=True)
            walls.append(time.monotonic() - t0)
            if proc.returncode != 0:
                sys.exit(f"pcc failed on {path}: {proc.stderr.strip()}")
            m = re.search(r"C\+\+ compile ([0-9.]+) s", proc.stdout)
            cxx.append(float(m.group(1)) if m else float("nan"))
        source = sum(os.path.getsize(os.path.join(out, f))
                     for f in os.listdir(out) if f.endswith(".cpp"))
        print(json.dumps({"onnx_ops": ops, "median_wall_s": round(statistics.median(walls), 2),
                          "median_cxx_s": round(statistics.median(cxx), 2),
                          "source_bytes": source, "repeats": args.repeats}),
              flush=True)


if __name__ == "__main__":
    main()

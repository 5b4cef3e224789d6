#!/usr/bin/env python3
"""Write shape-only GPT ONNX graphs for pcc's planner benchmark.

The graphs are the GPT configurations of Table 1 of Narayanan et al. 2021,
"Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM" (arXiv:2104.04473), listed in megatron_table1.json beside this
script: 1.7B to 1008B parameters, sequence 2048, vocabulary 51200.

Planning needs shapes only, so every weight is an initializer whose data lives
in an external file (`<model stem>.weights`) that is never written: each
initializer has data_location = EXTERNAL and external_data entries location,
offset and length (bytes), laid out contiguously as if the file existed. The
.onnx files stay small (KBs, a few hundred KB for 128 layers) whatever the
model size. pcc imports absent external data as weights with their shapes.
The causal mask [s, s] is external too. Split sizes, Reshape shapes and
scalar constants are ordinary inline initializers.

The graph is GPT-2 style (pre-LN decoder), opset 17, with node names like a
torch export ("/h.3/attn/MatMul"):

  x = Gather(wte, tokens) + wpe
  per layer:  x = x + attn(LayerNorm(x));  x = x + mlp(LayerNorm(x))
    attn: MatMul+Add (qkv) -> Split -> Reshape/Transpose into heads ->
          q @ kT * 1/sqrt(d) + causal mask -> Softmax -> @ v ->
          Transpose/Reshape -> MatMul+Add (out projection)
    mlp:  MatMul+Add -> erf GELU (Div, Erf, Add, Mul, Mul) -> MatMul+Add
    --dropout P: training-mode Dropout after the embeddings, on the
          attention probabilities and after both residual branches'
          output projections, where Megatron-LM's GPT has them
          pcc raises the GELU chain to pcc.gelu in float32; in float16 the
          f16-rounded sqrt 2 (1.4140625) misses the raising pattern's 1e-6
          relative tolerance, so the chain stays five elementwise ops.
  logits = MatMul(LayerNorm(x), W_lm)

usage:
  make_gpt.py --hidden H --layers L --heads A --batch B [--seq 2048]
              [--vocab 51200] [--dtype float16|float32] [--dropout P]
              -o model.onnx
  make_gpt.py --row N [--batch B] [--dtype ...] -o model.onnx
                                      (N = 1..10, Table 1 row; batch = its global batch)
  make_gpt.py --all OUTDIR [--dtype ...]   (gpt-<params>b.onnx for every row)

Needs only onnx and numpy (run with /usr/bin/python3).
"""
import argparse
import json
import math
import os
import sys
import tempfile
from collections import defaultdict

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "megatron_table1.json")
DTYPES = {"float16": (TensorProto.FLOAT16, np.float16, 2),
          "float32": (TensorProto.FLOAT, np.float32, 4)}


def external_tensor(name, elem_type, elem_bytes, shape, location, offset):
    """An initializer of `shape` whose data are `location`'s bytes from
    `offset` on: pcc plans from its shape and never reads them."""
    t = TensorProto()
    t.name = name
    t.data_type = elem_type
    t.dims.extend(shape)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)),
                       ("length", str(math.prod(shape) * elem_bytes))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def external_length(t):
    """The bytes an external_tensor's data take in its file."""
    return int(next(e.value for e in t.external_data if e.key == "length"))


class GraphBuilder:
    """Collects nodes and initializers; names nodes the way torch does.

    External initializers get contiguous offsets in one (unwritten) file.
    """

    def __init__(self, weights_file, dtype):
        self.weights_file = weights_file
        self.elem_type, self.np_dtype, self.elem_bytes = DTYPES[dtype]
        self.nodes = []
        self.initializers = []
        self.offset = 0
        self.op_count = defaultdict(int)

    def node(self, scope, op, inputs, out=None, **attrs):
        """Adds `scope/op[_k]` and returns its single output's name."""
        k = self.op_count[(scope, op)]
        self.op_count[(scope, op)] += 1
        name = f"{scope}/{op}" + (f"_{k}" if k else "")
        out = out or f"{name}_output_0"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def external(self, name, shape):
        """A float initializer of `shape` whose data is in the weights file."""
        t = external_tensor(name, self.elem_type, self.elem_bytes, shape,
                            self.weights_file, self.offset)
        self.offset += external_length(t)
        self.initializers.append(t)
        return name

    def inline(self, name, array):
        """A small initializer stored in the model (shapes, scalars)."""
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def scalar(self, name, value):
        return self.inline(name, np.array(value, dtype=self.np_dtype))

    def ints(self, name, values):
        return self.inline(name, np.array(values, dtype=np.int64))


def linear(g, scope, prefix, x, n_in, n_out):
    """x @ W[n_in, n_out] + b[n_out] as MatMul then Add."""
    w = g.external(f"{prefix}.weight", [n_in, n_out])
    b = g.external(f"{prefix}.bias", [n_out])
    return g.node(scope, "Add", [g.node(scope, "MatMul", [x, w]), b])


def layer_norm(g, scope, prefix, x, hidden):
    scale = g.external(f"{prefix}.weight", [hidden])
    bias = g.external(f"{prefix}.bias", [hidden])
    return g.node(scope, "LayerNormalization", [x, scale, bias],
                  axis=-1, epsilon=1e-5)


def attention(g, l, x, c, consts):
    """Causal multi-head self-attention of layer `l` on ln_1's output."""
    scope, prefix = f"/h.{l}/attn", f"h.{l}.attn"
    qkv = linear(g, f"{scope}/c_attn", f"{prefix}.c_attn", x, c["h"], 3 * c["h"])
    split = f"{scope}/Split"
    q, k, v = (f"{split}_output_{i}" for i in range(3))
    g.nodes.append(helper.make_node("Split", [qkv, consts["split"]], [q, k, v],
                                    name=split, axis=-1))
    heads = [g.node(scope, "Reshape", [t, consts["heads_shape"]]) for t in (q, k, v)]
    q = g.node(scope, "Transpose", [heads[0]], perm=[0, 2, 1, 3])
    k_t = g.node(scope, "Transpose", [heads[1]], perm=[0, 2, 3, 1])
    v = g.node(scope, "Transpose", [heads[2]], perm=[0, 2, 1, 3])
    scores = g.node(scope, "MatMul", [q, k_t])
    scores = g.node(scope, "Mul", [scores, consts["attn_scale"]])
    scores = g.node(scope, "Add", [scores, consts["mask"]])
    probs = g.node(scope, "Softmax", [scores], axis=-1)
    probs = dropout(g, scope, probs, consts)
    ctx = g.node(scope, "MatMul", [probs, v])
    ctx = g.node(scope, "Transpose", [ctx], perm=[0, 2, 1, 3])
    ctx = g.node(scope, "Reshape", [ctx, consts["hidden_shape"]])
    out = linear(g, f"{scope}/c_proj", f"{prefix}.c_proj", ctx, c["h"], c["h"])
    return dropout(g, scope, out, consts)


def dropout(g, scope, x, consts):
    """Training-mode Dropout (Megatron-LM's attention and hidden dropout);
    the identity when the graph is built without dropout."""
    if "dropout" not in consts:
        return x
    return g.node(scope, "Dropout", [x, consts["dropout"], consts["training"]])


def gelu(g, scope, x, consts):
    """x * 0.5 * (1 + erf(x / sqrt 2)) in torch's export order."""
    e = g.node(scope, "Erf", [g.node(scope, "Div", [x, consts["sqrt2"]])])
    e = g.node(scope, "Add", [e, consts["one"]])
    return g.node(scope, "Mul", [g.node(scope, "Mul", [x, e]), consts["half"]])


def mlp(g, l, x, c, consts):
    scope, prefix = f"/h.{l}/mlp", f"h.{l}.mlp"
    y = linear(g, f"{scope}/c_fc", f"{prefix}.c_fc", x, c["h"], 4 * c["h"])
    y = gelu(g, f"{scope}/act", y, consts)
    y = linear(g, f"{scope}/c_proj", f"{prefix}.c_proj", y, 4 * c["h"], c["h"])
    return dropout(g, scope, y, consts)


def decoder_layer(g, l, x, c, consts):
    a = attention(g, l, layer_norm(g, f"/h.{l}/ln_1", f"h.{l}.ln_1", x, c["h"]),
                  c, consts)
    x = g.node(f"/h.{l}", "Add", [x, a])
    m = mlp(g, l, layer_norm(g, f"/h.{l}/ln_2", f"h.{l}.ln_2", x, c["h"]),
            c, consts)
    return g.node(f"/h.{l}", "Add", [x, m])


def shared_constants(g, c):
    """Constants every layer uses: inline shapes and scalars, external mask."""
    b, s, h, a = c["batch"], c["seq"], c["h"], c["heads"]
    consts = {}
    if c.get("dropout"):
        consts["dropout"] = g.scalar("dropout_ratio", c["dropout"])
        consts["training"] = g.inline("dropout_training", np.array(True))
    return consts | {
        "split": g.ints("split_sizes", [h, h, h]),
        "heads_shape": g.ints("heads_shape", [b, s, a, h // a]),
        "hidden_shape": g.ints("hidden_shape", [b, s, h]),
        "attn_scale": g.scalar("attn_scale", 1.0 / math.sqrt(h // a)),
        "sqrt2": g.scalar("gelu_sqrt2", math.sqrt(2.0)),
        "one": g.scalar("gelu_one", 1.0),
        "half": g.scalar("gelu_half", 0.5),
        # Causal mask, 0 on and below the diagonal and -10000 above it.
        "mask": g.external("attn_mask", [s, s]),
    }


def build_gpt(hidden, layers, heads, batch, seq, vocab, dtype, weights_file,
              name="gpt", dropout_ratio=0.0):
    """The shape-only GPT ModelProto."""
    if hidden % heads:
        sys.exit(f"error: hidden {hidden} is not a multiple of heads {heads}")
    c = {"h": hidden, "heads": heads, "batch": batch, "seq": seq,
         "dropout": dropout_ratio}
    g = GraphBuilder(weights_file, dtype)
    consts = shared_constants(g, c)

    wte = g.external("wte.weight", [vocab, hidden])
    wpe = g.external("wpe.weight", [seq, hidden])
    x = g.node("/wte", "Gather", [wte, "tokens"], axis=0)
    x = dropout(g, "/drop", g.node("", "Add", [x, wpe]), consts)
    for l in range(layers):
        x = decoder_layer(g, l, x, c, consts)
    x = layer_norm(g, "/ln_f", "ln_f", x, hidden)
    # Megatron ties the output projection to wte (logits = x @ wte^T); a
    # separate, untied [h, V] weight keeps the graph a plain MatMul. It adds
    # V*h parameters over Megatron's count.
    w_lm = g.external("lm_head.weight", [hidden, vocab])
    g.node("/lm_head", "MatMul", [x, w_lm], out="logits")

    graph = helper.make_graph(
        g.nodes, name,
        [helper.make_tensor_value_info("tokens", TensorProto.INT64, [batch, seq])],
        [helper.make_tensor_value_info("logits", g.elem_type, [batch, seq, vocab])],
        initializer=g.initializers)
    model = helper.make_model(graph, producer_name="pcc bench/plan/make_gpt.py",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8  # opset 17's IR version
    return model, g.offset


def graph_params(hidden, layers, seq, vocab):
    """Parameters in the graph: Megatron's count (Eq. 2) plus the untied head."""
    per_layer = 12 * hidden * hidden + 13 * hidden
    return layers * per_layer + (2 * vocab + seq) * hidden + 2 * hidden


def load_table():
    with open(TABLE) as f:
        return json.load(f)


def row_config(table, n):
    rows = table["rows"]
    if not 1 <= n <= len(rows):
        sys.exit(f"error: --row must be 1..{len(rows)}")
    r = rows[n - 1]
    return {"hidden": r["hidden"], "layers": r["layers"], "heads": r["heads"],
            "batch": r["batch"], "seq": table["seq"], "vocab": table["vocab"],
            "name": f"gpt-{r['params_b']:g}b"}


def check(model, weights_file):
    """onnx.checker.check_model, without full_check.

    onnx 1.12's checker opens (never reads) every external data file, so the
    model is checked by path in a scratch directory holding an empty stand-in
    for the weights file; nothing is left behind.
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        open(os.path.join(tmp, weights_file), "wb").close()
        onnx.checker.check_model(path)


def write(cfg, dtype, path, quiet=False):
    """Writes the model to `path`; says what it wrote unless `quiet`."""
    stem = os.path.splitext(os.path.basename(path))[0]
    weights_file = f"{stem}.weights"
    model, weight_bytes = build_gpt(
        cfg["hidden"], cfg["layers"], cfg["heads"], cfg["batch"], cfg["seq"],
        cfg["vocab"], dtype, weights_file, name=cfg.get("name", stem),
        dropout_ratio=cfg.get("dropout", 0.0))
    check(model, weights_file)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    if quiet:
        return
    params = graph_params(cfg["hidden"], cfg["layers"], cfg["seq"], cfg["vocab"])
    print(f"{path}: {len(model.graph.node)} nodes, {params / 1e9:.1f}B params "
          f"(untied head), {weight_bytes / 2**30:.1f} GiB external "
          f"'{stem}.weights' (not written), {os.path.getsize(path)} bytes")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hidden", type=int)
    p.add_argument("--layers", type=int)
    p.add_argument("--heads", type=int)
    p.add_argument("--batch", type=int, help="global batch (default with "
                   "--row/--all: the row's)")
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--vocab", type=int, default=51200)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float16")
    p.add_argument("--dropout", type=float, default=0.0,
                   help="training-mode Dropout after the embeddings, on the "
                   "attention probabilities and after each residual branch "
                   "(Megatron-LM's places; its default is 0.1)")
    p.add_argument("--row", type=int, help="Table 1 row, 1..10")
    p.add_argument("--all", metavar="OUTDIR",
                   help="write gpt-<params>b.onnx for every Table 1 row")
    p.add_argument("-o", "--output", help="output .onnx path")
    args = p.parse_args(argv)
    if args.all is None and args.output is None:
        p.error("-o is required unless --all is given")
    if args.all is None and args.row is None and None in (
            args.hidden, args.layers, args.heads, args.batch):
        p.error("give --hidden --layers --heads --batch, or --row, or --all")
    return args


def jobs(args):
    """(config, output path) for every model to write."""
    if args.all is not None:
        table = load_table()
        cfgs = [row_config(table, n) for n in range(1, len(table["rows"]) + 1)]
        paths = [os.path.join(args.all, c["name"] + ".onnx") for c in cfgs]
    elif args.row is not None:
        cfgs, paths = [row_config(load_table(), args.row)], [args.output]
    else:
        return [({"hidden": args.hidden, "layers": args.layers,
                  "heads": args.heads, "batch": args.batch, "seq": args.seq,
                  "vocab": args.vocab, "dropout": args.dropout}, args.output)]
    for c in cfgs:
        c["batch"] = args.batch or c["batch"]
        c["dropout"] = args.dropout
    return list(zip(cfgs, paths))


def main(argv=None):
    args = parse_args(argv)
    for cfg, path in jobs(args):
        write(cfg, args.dtype, path)


if __name__ == "__main__":
    main()

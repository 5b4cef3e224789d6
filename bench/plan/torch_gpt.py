#!/usr/bin/env python3
"""GPT decoders written the ways people write them, exported by torch.

The planner must not depend on how a model was written (issue 16). This
script builds one GPT in any combination of the common styles and exports it
with `torch.onnx.export`, so planner checks run on real exports instead of
bench/plan/make_gpt.py's hand-built graphs:

  --style hf        Hugging Face GPT-2: Conv1D (addmm on a [B*S, d] view),
                    fused c_attn split three ways, scores divided by
                    sqrt(head dim), a causal `bias` buffer sliced and applied
                    with torch.where, tanh GELU written out as ops
                    (gelu_new), the head tied to the token embedding
  --style nanogpt   nanoGPT: fused qkv Linear, multiply by 1/sqrt(d), a mask
                    built in forward with tril + masked_fill(-inf), nn.GELU
                    (erf), tied head
  --style megatron  separate q, k, v Linears, multiply by the scale, a triu
                    mask added as -10000 (as Megatron's fused kernel means),
                    erf GELU, untied head

Individual choices override the style: --qkv fused|split, --scale div|mul,
--mask where|fill|add, --gelu tanh|erf, --tied / --untied.

Weights are random (seeded) and real: this writes a complete model. Keep the
sizes modest (GPT-2 medium, 355M parameters, exports in about a minute).
`--dtype float16` converts the exported fp32 graph to fp16 (torch 1.13 cannot
run LayerNorm in half on CPU, so it cannot trace an fp16 module).

  /usr/bin/python3 bench/plan/torch_gpt.py --style hf --layers 24 \
      --hidden 1024 --heads 16 --vocab 50257 --seq 1024 --batch 8 -o gpt2m.onnx
"""
import argparse
import io
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

from make_gpt import external_length, external_tensor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "models"))

STYLES = {
    "hf": dict(qkv="fused", scale="div", mask="where", gelu="tanh", tied=True),
    "nanogpt": dict(qkv="fused", scale="mul", mask="fill", gelu="erf",
                    tied=True),
    "megatron": dict(qkv="split", scale="mul", mask="add", gelu="erf",
                     tied=False),
}


class Conv1D(nn.Module):
    """Hugging Face's Conv1D: a Linear with the weight stored [in, out]."""

    def __init__(self, nin, nout):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nin, nout) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nout))

    def forward(self, x):
        shape = x.size()[:-1] + (self.weight.size(1),)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(shape)


def linear(cfg, nin, nout):
    return Conv1D(nin, nout) if cfg.style == "hf" else nn.Linear(nin, nout)


def gelu(cfg, x):
    if cfg.gelu == "tanh":
        return 0.5 * x * (1.0 + torch.tanh(
            math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    return F.gelu(x)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg.hidden
        if cfg.qkv == "fused":
            self.qkv = linear(cfg, d, 3 * d)
        else:
            self.q, self.k, self.v = (linear(cfg, d, d) for _ in range(3))
        self.proj = linear(cfg, d, d)
        self.drop = nn.Dropout(cfg.dropout)
        if cfg.mask == "where":
            n = cfg.seq
            self.register_buffer(
                "bias", torch.tril(torch.ones(n, n, dtype=torch.bool))
                .view(1, 1, n, n))

    def heads(self, x):
        b, s, _ = x.size()
        return x.view(b, s, self.cfg.heads, -1).permute(0, 2, 1, 3)

    def forward(self, x):
        cfg = self.cfg
        if cfg.qkv == "fused":
            q, k, v = self.qkv(x).split(cfg.hidden, dim=2)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        q, k, v = self.heads(q), self.heads(k), self.heads(v)
        scores = torch.matmul(q, k.transpose(-1, -2))
        if cfg.scale == "div":
            scores = scores / math.sqrt(v.size(-1))
        else:
            scores = scores * (1.0 / math.sqrt(cfg.hidden // cfg.heads))
        s = scores.size(-1)
        if cfg.mask == "where":
            causal = self.bias[:, :, s - q.size(-2):s, :s]
            low = torch.tensor(torch.finfo(scores.dtype).min,
                               dtype=scores.dtype)
            scores = torch.where(causal, scores, low)
        elif cfg.mask == "fill":
            keep = torch.tril(torch.ones(s, s, dtype=torch.bool,
                                         device=scores.device))
            scores = scores.masked_fill(~keep, float("-inf"))
        else:
            hide = torch.triu(torch.ones(s, s, dtype=scores.dtype,
                                         device=scores.device), diagonal=1)
            scores = scores + hide * -10000.0
        probs = self.drop(F.softmax(scores, dim=-1))
        y = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return self.drop(self.proj(y.view(y.size(0), y.size(1), cfg.hidden)))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.ln_1 = nn.LayerNorm(cfg.hidden)
        self.attn = Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.hidden)
        self.fc = linear(cfg, cfg.hidden, 4 * cfg.hidden)
        self.fc_out = linear(cfg, 4 * cfg.hidden, cfg.hidden)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.drop(self.fc_out(gelu(self.cfg,
                                               self.fc(self.ln_2(x)))))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab, cfg.hidden)
        self.wpe = nn.Embedding(cfg.seq, cfg.hidden)
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.layers)])
        self.ln_f = nn.LayerNorm(cfg.hidden)
        self.drop = nn.Dropout(cfg.dropout)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
        if cfg.tied:
            self.lm_head.weight = self.wte.weight

    def forward(self, tokens):
        pos = torch.arange(tokens.size(1), dtype=torch.long).unsqueeze(0)
        x = self.drop(self.wte(tokens) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def config(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--style", choices=sorted(STYLES), default="hf")
    ap.add_argument("--qkv", choices=["fused", "split"])
    ap.add_argument("--scale", choices=["div", "mul"])
    ap.add_argument("--mask", choices=["where", "fill", "add"])
    ap.add_argument("--gelu", choices=["tanh", "erf"])
    ap.add_argument("--tied", dest="tied", action="store_true", default=None)
    ap.add_argument("--untied", dest="tied", action="store_false")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--dtype", choices=["float32", "float16"],
                    default="float32")
    ap.add_argument("--opset", type=int, default=14)
    ap.add_argument("--dropout", type=float, default=0.0,
                    help="attention, hidden and embedding dropout; exported "
                    "in training mode (Dropout nodes) when not 0")
    ap.add_argument("--shape-only", action="store_true",
                    help="no weights: trace on PyTorch's meta device and "
                    "write every parameter as external data that is never "
                    "written (any size plans; nothing runs)")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--data", help="also write the tokens and PyTorch's fp32 "
                    "logits here (input_0.pb, output_0.pb), for --check")
    cfg = ap.parse_args(argv)
    for key, value in STYLES[cfg.style].items():
        if getattr(cfg, key) is None:
            setattr(cfg, key, value)
    return cfg


def export_mode(cfg):
    """With dropout, a training-mode export (Dropout nodes, nothing folded),
    as docs/training.md says to export for training."""
    return (torch.onnx.TrainingMode.TRAINING if cfg.dropout > 0
            else torch.onnx.TrainingMode.EVAL)


def meta_model(cfg):
    """The GPT with every parameter and buffer on PyTorch's meta device
    (shapes, no memory): the tensor factories its modules call make meta
    tensors while it is built."""
    factories = {f: getattr(torch, f) for f in ("empty", "zeros", "ones",
                                                "randn")}

    def on_meta(make):
        def made(*args, **kwargs):
            if kwargs.get("device") is None:
                kwargs["device"] = "meta"
            return make(*args, **kwargs)
        return made

    try:
        for name, make in factories.items():
            setattr(torch, name, on_meta(make))
        model = GPT(cfg)
    finally:
        for name, make in factories.items():
            setattr(torch, name, make)
    return model


def fold_static_shapes(m):
    """Shape of a tensor whose shape is static made a constant, as torch's
    export does with its own shape inference (off here: it reads the meta
    parameters' data): masks made from a sequence length fold, as in a
    full export."""
    g = m.graph
    inferred = onnx.shape_inference.infer_shapes(m)
    shapes = {}
    for v in (list(inferred.graph.value_info) + list(inferred.graph.input)
              + list(inferred.graph.output)):
        dims = v.type.tensor_type.shape.dim
        if dims and all(d.HasField("dim_value") for d in dims):
            shapes[v.name] = [d.dim_value for d in dims]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    for i, node in enumerate(g.node):
        if node.op_type != "Shape" or node.input[0] not in shapes:
            continue
        dims = shapes[node.input[0]]
        attrs = {a.name: a.i for a in node.attribute}
        start, end = attrs.get("start", 0), attrs.get("end", len(dims))
        value = numpy_helper.from_array(np.array(dims[start:end],
                                                 dtype=np.int64))
        g.node[i].CopyFrom(onnx.helper.make_node(
            "Constant", [], list(node.output), name=node.name, value=value))


def export_shape_only(cfg):
    """Traces the meta model (any size: nothing is computed) and writes its
    parameters as external data that is never written, as make_gpt.py does;
    the causal `bias` buffers (values the planner reads) are inlined once."""
    model = meta_model(cfg)
    model.train(cfg.dropout > 0)
    tokens = torch.zeros(cfg.batch, cfg.seq, dtype=torch.long)
    buf = io.BytesIO()
    # Tensors without data all compare equal, so torch's merging of equal
    # initializers would merge every parameter: off (shared parameters are
    # one value in the trace anyway).
    dedup = torch._C._jit_pass_onnx_deduplicate_initializers
    torch._C._jit_pass_onnx_deduplicate_initializers = \
        lambda graph, params, train: params
    try:
        with torch.no_grad():
            torch.onnx.utils._export(
                model, (tokens,), buf, export_params=False,
                opset_version=cfg.opset, input_names=["tokens"],
                output_names=["logits"], do_constant_folding=False,
                training=export_mode(cfg), onnx_shape_inference=False)
    finally:
        torch._C._jit_pass_onnx_deduplicate_initializers = dedup
    m = onnx.load_from_string(buf.getvalue())
    g = m.graph
    stem = os.path.splitext(os.path.basename(cfg.output))[0]
    offset, causal, params = 0, None, 0
    renames = {}
    for v in list(g.input):
        if v.name == "tokens":
            continue
        t = v.type.tensor_type
        dims = [d.dim_value for d in t.shape.dim]
        g.input.remove(v)
        if v.name.endswith("attn.bias"):
            # The causal buffer: one inlined copy for every layer.
            if causal is None:
                causal = v.name
                n = cfg.seq
                g.initializer.append(numpy_helper.from_array(
                    np.tril(np.ones((n, n), dtype=bool)).reshape(dims),
                    v.name))
            renames[v.name] = causal
            continue
        elem, elem_bytes = t.elem_type, 4
        if elem == onnx.TensorProto.FLOAT and cfg.dtype == "float16":
            elem, elem_bytes = onnx.TensorProto.FLOAT16, 2
        init = external_tensor(v.name, elem, elem_bytes, dims,
                               f"{stem}.weights", offset)
        offset += external_length(init)
        params += math.prod(dims)
        g.initializer.append(init)
    for node in g.node:
        for i, name in enumerate(node.input):
            node.input[i] = renames.get(name, name)
    if cfg.dtype == "float16":
        # As the full export: traced in fp32, stored in fp16 (the externals
        # are fp16 already).
        from export_models import onnx_to_float16
        m = onnx_to_float16(m)
    fold_static_shapes(m)
    onnx.save(m, cfg.output)
    print(f"{cfg.output}: {cfg.style} shape-only, {len(g.node)} nodes, "
          f"{params} parameters ({offset / 2**30:.1f} GiB external "
          f"'{stem}.weights', not written)")


def export(cfg):
    if cfg.shape_only:
        return export_shape_only(cfg)
    torch.manual_seed(0)
    model = GPT(cfg).eval()
    # No two parameters equal (zero biases, unit norm scales): torch's export
    # would share one initializer among them, which a trained model never
    # does.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape) * 0.01)
    tokens = torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq))
    if cfg.data:
        from export_models import write_tensor
        os.makedirs(cfg.data, exist_ok=True)
        with torch.no_grad():
            logits = model(tokens)
        write_tensor(os.path.join(cfg.data, "input_0.pb"), tokens.numpy(),
                     "tokens")
        write_tensor(os.path.join(cfg.data, "output_0.pb"), logits.numpy(),
                     "logits")
    buf = io.BytesIO()
    training = cfg.dropout > 0
    model.train(training)
    with torch.no_grad():
        torch.onnx.export(model, (tokens,), buf, opset_version=cfg.opset,
                          do_constant_folding=not training,
                          training=export_mode(cfg),
                          input_names=["tokens"], output_names=["logits"])
    m = onnx.load_from_string(buf.getvalue())
    if cfg.dtype == "float16":
        from export_models import onnx_to_float16
        m = onnx_to_float16(m)
    onnx.save(m, cfg.output)
    params = sum(p.numel() for p in model.parameters())
    print(f"{cfg.output}: {cfg.style} (qkv {cfg.qkv}, scale {cfg.scale}, "
          f"mask {cfg.mask}, gelu {cfg.gelu}, "
          f"{'tied' if cfg.tied else 'untied'}), {len(m.graph.node)} nodes, "
          f"{params} parameters")


if __name__ == "__main__":
    export(config())

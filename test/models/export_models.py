#!/usr/bin/env python3
"""Export small real-world models to ONNX with reference test data.

Usage: export_models.py OUTDIR [--opset N] [--only NAME ...]

For every model NAME this writes
    OUTDIR/NAME/model.onnx
    OUTDIR/NAME/test_data_set_0/input_0.pb [, input_1.pb ...]
    OUTDIR/NAME/test_data_set_0/output_0.pb
in the ONNX backend-test layout (serialized onnx.TensorProto files). The
reference outputs come from running the torch model (eval mode, CPU, one
thread) on torch.manual_seed(0) random inputs. `gpt_dynamic` is the `gpt`
model exported with dynamic {0: batch, 1: seq} axes and has no test data.

Graph inputs are named `input` (or `tokens` for the GPT models) and the
graph output `output`. Everything is float32 except the int64 token ids and
the 16-bit models: `gpt_bf16` is `gpt` converted by torch (`.to(bfloat16)`)
before export, `gpt_fp16` is `gpt`'s export converted to float16 the way
onnxconverter-common does it (initializers, constants, casts, graph types);
their reference outputs are the float32 model's.
Needs Debian's python3-torch / python3-onnx (run with /usr/bin/python3);
`vit` uses torchvision when it is installed and a hand-written equivalent
otherwise.
"""
import argparse
import io
import math
import os
import sys
import warnings

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

DEFAULT_OPSET = 14


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64), nn.ReLU(),
            nn.Linear(64, 10))

    def forward(self, x):
        return self.net(x)


class Classifier(nn.Module):
    """Class probabilities over 16 classes: under Megatron's layouts the
    last (column-parallel) layer leaves the softmax's axis split."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64), nn.ReLU(),
            nn.Linear(64, 16), nn.Softmax(dim=-1))

    def forward(self, x):
        return self.net(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, max_len):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        del max_len  # the mask is built in forward() on purpose

    def forward(self, x):
        B, T, C = x.shape
        H = self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, H, C // H).transpose(1, 2)
        k = k.view(B, T, H, C // H).transpose(1, 2)
        v = v.view(B, T, H, C // H).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        # Built here (not a buffer) so a static export folds it to a constant
        # and a dynamic-seq export emits Trilu.
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d_model, n_head, max_len):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, max_len)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(),
            nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=128, max_len=32, d_model=64, n_head=8, n_layer=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(
            [Block(d_model, n_head, max_len) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):
        T = tokens.shape[1]
        pos = torch.arange(T, dtype=torch.long, device=tokens.device)
        x = self.tok(tokens) + self.pos(pos).unsqueeze(0)
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


class HandViT(nn.Module):
    """Fallback when torchvision is missing: same architecture as
    torchvision.models.VisionTransformer (conv patchify + class token +
    learned pos-embedding + pre-LN encoder + LN + linear head)."""

    def __init__(self, image_size=32, patch_size=8, num_layers=2, num_heads=8,
                 hidden_dim=64, mlp_dim=128, num_classes=10):
        super().__init__()
        n = (image_size // patch_size) ** 2
        self.conv_proj = nn.Conv2d(3, hidden_dim, patch_size, patch_size)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden_dim))
        self.pos = nn.Parameter(torch.empty(1, n + 1, hidden_dim).normal_(std=0.02))
        layer = nn.TransformerEncoderLayer(
            hidden_dim, num_heads, mlp_dim, dropout=0.0, activation="gelu",
            batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers,
                                             enable_nested_tensor=False)
        self.ln = nn.LayerNorm(hidden_dim, eps=1e-6)
        self.head = nn.Linear(hidden_dim, num_classes)

    def forward(self, x):
        x = self.conv_proj(x).flatten(2).transpose(1, 2)
        cls = self.class_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos
        x = self.ln(self.encoder(x))
        return self.head(x[:, 0])


def make_vit():
    try:
        from torchvision.models import VisionTransformer
    except ImportError:
        return HandViT(), "hand-written (torchvision not installed)"
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                             num_heads=8, hidden_dim=64, mlp_dim=128,
                             num_classes=10), "torchvision"


def make_cnn():
    m = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AvgPool2d(2),
        nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for bn in (m[1], m[5]):
            c = bn.num_features
            bn.running_mean.copy_(torch.randn(c, generator=g) * 0.5)
            bn.running_var.copy_(torch.rand(c, generator=g) * 1.5 + 0.25)
            bn.weight.copy_(torch.rand(c, generator=g) + 0.5)
            bn.bias.copy_(torch.randn(c, generator=g) * 0.1)
    return m


class Bert(nn.Module):
    """A BERT-style encoder: token + position embeddings, 4 post-norm
    TransformerEncoder layers (GELU), a padding mask that hides each row's
    padded tokens from attention."""

    def __init__(self, vocab=128, d_model=32, n_head=4, n_layer=4, max_len=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_head, 4 * d_model,
                                           dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, n_layer)
        self.ln = nn.LayerNorm(d_model)

    def forward(self, tokens, padding):
        T = tokens.shape[1]
        pos = torch.arange(T, dtype=torch.long, device=tokens.device)
        x = self.tok(tokens) + self.pos(pos).unsqueeze(0)
        return self.ln(self.enc(x, src_key_padding_mask=padding))


class T5Norm(nn.Module):
    """T5's RMS norm: a scale, no mean, no bias."""

    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)
                                             + 1e-6)


class T5Attention(nn.Module):
    """T5's attention: no biases, no 1/sqrt(d) scaling, and in the first
    layer of each stack a learned bias per head and relative distance
    (clamped int64 distances: an integer Clip) that every layer adds."""

    def __init__(self, d, heads, relative=False):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False)
                                          for _ in range(4))
        self.relative = nn.Embedding(16, heads) if relative else None

    def position_bias(self, n):
        distance = torch.arange(n)[None, :] - torch.arange(n)[:, None]
        buckets = distance.abs().clamp(max=15)
        return self.relative(buckets).permute(2, 0, 1).unsqueeze(0)

    def forward(self, x, kv, bias):
        b, s, _ = x.shape
        t = kv.shape[1]
        q = self.q(x).view(b, s, self.heads, -1).transpose(1, 2)
        k = self.k(kv).view(b, t, self.heads, -1).transpose(1, 2)
        v = self.v(kv).view(b, t, self.heads, -1).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) + bias
        y = scores.softmax(-1) @ v
        return self.o(y.transpose(1, 2).reshape(b, s, -1))


class T5Layer(nn.Module):
    def __init__(self, d, heads, cross, first):
        super().__init__()
        self.norm1, self.attn = T5Norm(d), T5Attention(d, heads, first)
        self.cross = T5Attention(d, heads) if cross else None
        self.norm2 = T5Norm(d) if cross else None
        self.norm3 = T5Norm(d)
        self.wi = nn.Linear(d, 4 * d, bias=False)
        self.wo = nn.Linear(4 * d, d, bias=False)

    def forward(self, x, bias, memory=None):
        y = self.norm1(x)
        x = x + self.attn(y, y, bias)
        if self.cross is not None:
            x = x + self.cross(self.norm2(x), memory, 0.0)
        return x + self.wo(F.relu(self.wi(self.norm3(x))))


class T5(nn.Module):
    """A T5-style encoder-decoder written with T5's own parts (the model
    zoo's T5Style is nn.Transformer): shared tied embedding, RMS norms,
    relative position biases made by each stack's first layer, a causal
    decoder with cross-attention."""

    def __init__(self, vocab=128, d=32, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.encoder = nn.ModuleList(T5Layer(d, heads, False, i == 0)
                                     for i in range(layers))
        self.decoder = nn.ModuleList(T5Layer(d, heads, True, i == 0)
                                     for i in range(layers))
        self.enc_norm, self.dec_norm = T5Norm(d), T5Norm(d)

    def forward(self, source, target):
        x = self.embed(source)
        bias = self.encoder[0].attn.position_bias(source.shape[1])
        for layer in self.encoder:
            x = layer(x, bias)
        memory = self.enc_norm(x)
        n = target.shape[1]
        causal = torch.triu(torch.full((n, n), float("-inf")), 1)
        bias = self.decoder[0].attn.position_bias(n) + causal
        y = self.embed(target)
        for layer in self.decoder:
            y = layer(y, bias, memory)
        return self.dec_norm(y) @ self.embed.weight.t()


class PadNorm(nn.Module):
    """Ops composed at import: reflect, replicate and constant Pad,
    GroupNorm (Reshape -> InstanceNormalization -> Reshape), InstanceNorm,
    Tile (repeat), DepthToSpace (pixel_shuffle) and a strided, grouped
    ConvTranspose with output_padding (a UNet's up-sampling)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.gn = nn.GroupNorm(4, 8)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.up = nn.Conv2d(8, 16, 1)
        self.deconv = nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1,
                                         output_padding=1, groups=2)

    def forward(self, x):
        x = self.conv(F.pad(x, (1, 1, 2, 0), mode="reflect"))
        x = self.gn(F.pad(x, (1, 2, 1, 1), mode="replicate"))
        x = self.inorm(F.pad(x, (0, 1, 1, 0), value=0.5))
        x = self.deconv(F.pixel_shuffle(self.up(x), 2))
        return torch.cat([x, x.repeat(1, 2, 1, 1)], dim=1)


class Upsample(nn.Module):
    """Resize as torch exports it: nearest by a scale factor, bilinear to a
    size (half-pixel), bilinear with align_corners; then a cumulative sum."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        x = self.conv(F.interpolate(x, scale_factor=2, mode="nearest"))
        y = F.interpolate(x, size=(13, 11), mode="bilinear",
                          align_corners=False)
        y = F.interpolate(y, scale_factor=1.5, mode="bilinear",
                          align_corners=True)
        return torch.cumsum(y, dim=2)


class Einsum(nn.Module):
    """Attention written with torch.einsum: projections ("bsd,de->bse"),
    scores ("bhid,bhjd->bhij"), weighted values ("bhij,bhjd->bihd": the
    output's index order differs from the product's), and a weighted sum
    over an ellipsis ("...d,d->...")."""

    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.wq = nn.Parameter(torch.randn(d, d) / d ** 0.5)
        self.wk = nn.Parameter(torch.randn(d, d) / d ** 0.5)
        self.wv = nn.Parameter(torch.randn(d, d) / d ** 0.5)
        self.u = nn.Parameter(torch.randn(d))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = (torch.einsum("bsd,de->bse", x, w)
                   .reshape(b, s, self.heads, d // self.heads)
                   .transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        att = torch.einsum("bhid,bhjd->bhij", q, k).softmax(-1)
        y = torch.einsum("bhij,bhjd->bihd", att, v).reshape(b, s, d)
        return y + torch.einsum("...d,d->...", x, self.u).unsqueeze(-1)


class RnnTagger(nn.Module):
    """A sequence tagger: embeddings, a 2-layer bidirectional batch-first
    LSTM, a GRU over its states, a tanh RNN and a per-token classifier."""

    def __init__(self, vocab=64, d=16, hidden=12, tags=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, num_layers=2, bidirectional=True,
                            batch_first=True)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
        self.rnn = nn.RNN(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, tags)

    def forward(self, tokens):
        x, _ = self.lstm(self.emb(tokens))
        x, _ = self.gru(x)
        x, _ = self.rnn(x)
        return self.out(x)


class TopKHead(nn.Module):
    """TopK as a model's head: the 3 largest class scores of each token
    with their indices (the last axis), and the 2 smallest scores of each
    class along the sequence (a middle axis, largest=False)."""

    def __init__(self, d=16, classes=10):
        super().__init__()
        self.proj = nn.Linear(d, classes)

    def forward(self, x):
        s = self.proj(x)
        v, i = torch.topk(s, 3, dim=-1)
        w, j = torch.topk(s, 2, dim=1, largest=False)
        return (v + i.to(v.dtype)).sum(-1) + \
            (w - j.to(w.dtype)).sum(1).mean(-1, keepdim=True)


class ScatterRows(nn.Module):
    """Index assignment as torch exports it (index_put_ -> ScatterND):
    rows of a projection written at a buffer's positions along the
    sequence, then a constant written into a block (a slice assignment,
    as Swin builds its attention mask)."""

    def __init__(self, d=16):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.register_buffer("pos", torch.tensor([4, 0, 2]))

    def forward(self, x):
        h = self.proj(x)
        canvas = h * 0.5
        canvas[:, self.pos] = h[:, :3] * 2
        canvas[:, 1:3, 4:8] = 1.0
        return canvas + h


class Volume(nn.Module):
    """3-D convolutions and pools (video and medical models): a padded,
    strided, dilated grouped Conv3d, a padded dilated MaxPool3d and a padded
    AvgPool3d that does not count the padding, as pcc composes them of 2-D
    ones (VolumeConverters.cpp)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(4, 8, 3, stride=(1, 2, 1), padding=(1, 0, 2),
                              dilation=(2, 1, 1), groups=2)
        self.conv2 = nn.Conv3d(8, 8, (2, 1, 3))

    def forward(self, x):
        h = F.max_pool3d(torch.relu(self.conv(x)), (3, 2, 2), (2, 1, 2),
                         (1, 0, 1), dilation=(1, 2, 1))
        return F.avg_pool3d(self.conv2(h), 2, 1, 1, count_include_pad=False)


class Depthwise(nn.Module):
    """MobileNet's block: a pointwise conv, a depthwise 3x3 conv with two
    filters per channel (groups = input channels), a bias-free pointwise
    projection. Batch 1, so tensor parallelism must split channels."""

    def __init__(self):
        super().__init__()
        self.expand = nn.Conv2d(8, 32, 1)
        self.depthwise = nn.Conv2d(32, 64, 3, padding=1, groups=32)
        self.project = nn.Conv2d(64, 8, 1, bias=False)

    def forward(self, x):
        return self.project(torch.relu(self.depthwise(torch.relu(
            self.expand(x)))))


class Grouped(nn.Module):
    """A grouped conv that is not depthwise (2 groups of 2 channels)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, stride=(2, 1), padding=(0, 2), groups=2)

    def forward(self, x):
        return torch.relu(self.conv(x))


def make_encoder():
    return nn.TransformerEncoderLayer(d_model=64, nhead=8, dim_feedforward=128,
                                      dropout=0.0, batch_first=True)


# name -> (factory, input name, input spec, dynamic_axes, write test data)
# input spec: ("float", shape) or ("tokens", shape, vocab)
MODELS = {
    "mlp": (MLP, "input", ("float", (8, 64)), None, True),
    "classifier": (Classifier, "input", ("float", (8, 64)), None, True),
    "encoder": (make_encoder, "input", ("float", (8, 16, 64)), None, True),
    "gpt": (GPT, "tokens", ("tokens", (8, 16), 128), None, True),
    "gpt_dynamic": (GPT, "tokens", ("tokens", (8, 16), 128),
                    {"tokens": {0: "batch", 1: "seq"},
                     "output": {0: "batch", 1: "seq"}}, False),
    "bert": (Bert, ("tokens", "padding"), ("tokens+padding", (8, 16), 128),
             None, True),
    # 8 layers: enough blocks for 4- and 8-stage pipelines.
    "gpt8": (lambda: GPT(n_layer=8, d_model=32, n_head=4), "tokens",
             ("tokens", (8, 16), 128), None,
             True),
    # 160 tokens: attention spans several 64 x 64 tiles of the kernel (a
    # partial last one), and sp splits cut tiles and causal blocks.
    "gpt_long": (lambda: GPT(n_layer=1, d_model=32, n_head=4, max_len=160),
                 "tokens", ("tokens", (2, 160), 128), None, True),
    "bert_long": (lambda: Bert(n_layer=1, max_len=160),
                  ("tokens", "padding"), ("tokens+padding", (4, 160), 128),
                  None, True),
    # Heads of 64 and 128 features over 160 tokens: the shapes GPU ranks
    # run on tensor cores in 16 bits (AttentionTensorCores.cu).
    "gpt_heads64": (lambda: GPT(n_layer=1, d_model=128, n_head=2, max_len=160),
                    "tokens", ("tokens", (2, 160), 128), None, True),
    "bert_heads128": (lambda: Bert(n_layer=1, d_model=128, n_head=1,
                                   max_len=160),
                      ("tokens", "padding"), ("tokens+padding", (4, 160), 128),
                      None, True),
    # GPT-2's case in small: 101 tokens, which no tensor-parallel degree
    # divides (pcc pads the vocabulary as Megatron does); its head is a
    # constant-folded [d, vocab] initializer.
    "gpt_odd_vocab": (lambda: GPT(vocab=101), "tokens",
                      ("tokens", (8, 16), 101), None, True),
    "t5": (T5, ("source", "target"), ("tokens+tokens", (8, 16), 128), None,
           True),
    "gpt_bf16": (GPT, "tokens", ("tokens", (8, 16), 128), None, True),
    "gpt_fp16": (GPT, "tokens", ("tokens", (8, 16), 128), None, True),
    "vit": (make_vit, "input", ("float", (8, 3, 32, 32)), None, True),
    "cnn": (make_cnn, "input", ("float", (8, 3, 16, 16)), None, True),
    "padnorm": (PadNorm, "input", ("float", (4, 3, 8, 8)), None, True),
    "upsample": (Upsample, "input", ("float", (4, 3, 5, 6)), None, True),
    "einsum": (Einsum, "input", ("float", (4, 6, 16)), None, True),
    "rnn_tagger": (RnnTagger, "tokens", ("tokens", (4, 7), 64), None, True),
    "topk": (TopKHead, "input", ("float", (4, 6, 16)), None, True),
    "scatter": (ScatterRows, "input", ("float", (4, 6, 16)), None, True),
    "volume": (Volume, "input", ("float", (4, 4, 7, 12, 6)), None, True),
    "depthwise": (Depthwise, "input", ("float", (1, 8, 32, 32)), None, True),
    "grouped": (Grouped, "input", ("float", (4, 4, 12, 6)), None, True),
}

# Models stored in 16 bits: how each is made from its float32 model.
SIXTEEN_BIT = {"gpt_bf16": "torch", "gpt_fp16": "onnx"}
# Opsets other than --opset: bfloat16 Pow (the decomposed LayerNorm) needs
# opset 15; 17 also exports nn.LayerNorm as one LayerNormalization node.
OPSET = {"gpt_bf16": 17}

# torch's TrainingMode.EVAL export runs an "eval peephole" pass that folds
# BatchNormalization into the preceding Conv. The model is in eval() mode, so
# PRESERVE exports the same inference semantics but keeps the
# BatchNormalization nodes (training_mode=0) for the importer to handle.
KEEP_BATCHNORM = {"cnn"}


# ---------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------

def perturb_trivial_params(model):
    """Add seeded noise to every parameter that is still
    constant (zero biases, unit LayerNorm weights, torchvision ViT's all-zero
    class token and classifier head, ...), so the reference output depends on
    every weight and an importer that drops e.g. a LayerNorm bias is caught."""
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 0 and bool((p == p.reshape(-1)[0]).all()):
                p.add_(torch.randn(p.shape, generator=g) * 0.1)


def onnx_to_float16(m):
    """`m` with every float32 tensor stored as float16, as
    onnxconverter_common.float16.convert_float_to_float16 does (not in
    Debian): initializers, Constant and ConstantOfShape values, Cast targets
    and the graph's types."""
    F32, F16 = onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16

    def tensor16(t):
        if t.data_type != F32:
            return t
        return numpy_helper.from_array(
            numpy_helper.to_array(t).astype(np.float16), t.name)

    g = m.graph
    for i, t in enumerate(g.initializer):
        g.initializer[i].CopyFrom(tensor16(t))
    for n in g.node:
        for a in n.attribute:
            if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                a.t.CopyFrom(tensor16(a.t))
            if n.op_type == "Cast" and a.name == "to" and a.i == F32:
                a.i = F16
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == F32:
            v.type.tensor_type.elem_type = F16
    return m


def make_input(spec):
    """The model's inputs, as a tuple."""
    torch.manual_seed(0)
    if spec[0] == "tokens":
        return (torch.randint(0, spec[2], spec[1], dtype=torch.int64),)
    if spec[0] == "tokens+tokens":
        return (torch.randint(0, spec[2], spec[1], dtype=torch.int64),
                torch.randint(0, spec[2], spec[1], dtype=torch.int64))
    if spec[0] == "tokens+padding":
        # Sequences of different lengths: row b pads its last b % 5 tokens.
        tokens = torch.randint(0, spec[2], spec[1], dtype=torch.int64)
        batch, seq = spec[1]
        pad = torch.zeros(batch, seq, dtype=torch.bool)
        for b in range(batch):
            if b % 5:
                pad[b, seq - b % 5:] = True
        return tokens, pad
    return (torch.randn(*spec[1], dtype=torch.float32),)


def write_tensor(path, array, name):
    t = numpy_helper.from_array(np.ascontiguousarray(array), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def export_one(name, outdir, opset):
    factory, in_name, spec, dyn, with_data = MODELS[name]
    opset = OPSET.get(name, opset)
    torch.manual_seed(0)  # identical weights for gpt and gpt_dynamic
    made = factory()
    note = ""
    if isinstance(made, tuple):
        made, note = made
    model = made.eval()
    perturb_trivial_params(model)
    nparams = sum(p.numel() for p in model.parameters())
    assert nparams * 4 < 1 << 20, f"{name}: {nparams} params is too big"

    x = make_input(spec)
    in_names = [in_name] if isinstance(in_name, str) else list(in_name)
    # Grad mode stays on (parameters require grad) for both the reference run
    # and the export: in torch 1.13 that keeps nn.TransformerEncoderLayer and
    # nn.MultiheadAttention off their fused inference fast path
    # (aten::_transformer_encoder_layer_fwd / _native_multi_head_attention),
    # which cannot be exported to ONNX.
    ref = model(*x).detach()
    if SIXTEEN_BIT.get(name) == "torch":
        model = model.to(torch.bfloat16)

    mdir = os.path.join(outdir, name)
    os.makedirs(mdir, exist_ok=True)
    path = os.path.join(mdir, "model.onnx")
    buf = io.BytesIO()
    # Some torch versions print export diagnostics on stdout; keep it quiet.
    devnull = open(os.devnull, "w")
    saved = sys.stdout
    sys.stdout = devnull
    try:
        torch.onnx.export(
            model, x, buf, export_params=True, opset_version=opset,
            do_constant_folding=True, input_names=in_names,
            output_names=["output"], dynamic_axes=dyn,
            training=(torch.onnx.TrainingMode.PRESERVE
                      if name in KEEP_BATCHNORM
                      else torch.onnx.TrainingMode.EVAL),
            verbose=False)
    finally:
        sys.stdout = saved
        devnull.close()
    m = onnx.load_from_string(buf.getvalue())
    if SIXTEEN_BIT.get(name) == "onnx":
        m = onnx_to_float16(m)
    m.producer_name = "pcc-export_models"
    m.producer_version = torch.__version__
    m.doc_string = f"pcc test model '{name}' exported by torch {torch.__version__}"
    onnx.checker.check_model(m, full_check=True)
    m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())

    if with_data:
        ddir = os.path.join(mdir, "test_data_set_0")
        os.makedirs(ddir, exist_ok=True)
        for k, (t, n) in enumerate(zip(x, in_names)):
            write_tensor(os.path.join(ddir, f"input_{k}.pb"), t.numpy(), n)
        write_tensor(os.path.join(ddir, "output_0.pb"), ref.numpy(), "output")

    ops = sorted({(n.domain + "::" if n.domain else "") + n.op_type
                  for n in m.graph.node})
    extra = f" [{note}]" if note else ""
    print(f"{name}: opset {opset}, {len(m.graph.node)} nodes, "
          f"{nparams} params{extra}; ops: {' '.join(ops)}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--opset", type=int, default=DEFAULT_OPSET)
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=list(MODELS),
                    help="subset of: " + ", ".join(MODELS))
    args = ap.parse_args(argv[1:])
    for name in args.only or list(MODELS):
        export_one(name, args.outdir, args.opset)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

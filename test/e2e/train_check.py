#!/usr/bin/env python3
"""Train a torch-exported model with `pcc --train` under several strategies
and compare every step's loss with PyTorch's own training of the same model.

Usage: train_check.py WORKDIR --model mlp|gpt --mpirun CMD
                      --optimizer sgd|adamw [--steps N] STRATEGY...
  STRATEGY as run_strategies.py takes it: "1" (one rank), "dp=2", "tp=2",
  "dp=2,tp=2", ..., plus "zero=N" for pcc's --zero N ("dp=2,zero=3") and
  "sched=gpipe" for the executable's --pp-schedule ("pp=2,mb=4,sched=gpipe";
  "sched=zb-h1" compiles the zero-bubble schedule too)
  and "recompute=full" for pcc's --recompute full. --memory adds each
  program's scratch arena and pipeline stash per microbatch (plan.json's,
  the largest stage's).

The model is exported returning its loss (training mode, no constant
folding, so parameters keep their names); N batches are written as
WORKDIR/<model>/batches/batch_K/input_*.pb; PyTorch trains a copy with the
same optimizer for N steps. For each strategy prints one line:
  dp=2 ranks=2: losses PASS max_rel_err=3.1e-07 (4 steps) parameters PASS
  max_abs_err=2.4e-08 [resumed PASS]
(the parameters --save wrote after the last step against PyTorch's, rtol
1e-3 atol 1e-4; with --resume, a run of half the steps saved and resumed
for the rest must print the same losses), and on a mismatch both loss
sequences. Losses must agree to --rtol
(atol 1e-6; default --rtol 2e-5, far inside the rtol 1e-3 asked of pcc)
at every step: step k's loss is computed from the parameters after k
updates, so this checks the gradients and the optimizer too.
"""
import argparse
import copy
import json
import os
import shlex
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "models"))
from export_models import T5  # noqa: E402
from run_strategies import strategy_flags  # noqa: E402

OPTIMIZERS = {
    "sgd": dict(flags=["--optimizer", "sgd", "--lr", "0.05", "--momentum",
                       "0.9", "--weight-decay", "0.01"],
                make=lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9,
                                               weight_decay=0.01)),
    "adamw": dict(flags=["--optimizer", "adamw", "--lr", "0.01"],
                  make=lambda p: torch.optim.AdamW(p, lr=0.01)),
}


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 4)

    def forward(self, x, y):
        h = torch.tanh(self.fc2(F.gelu(self.fc1(x))))
        # torch 1.13 does not export F.mse_loss; this is its definition.
        return ((self.fc3(h) - y) ** 2).mean()


class Classifier(nn.Module):
    """An MLP returning class scores only: pcc adds the loss (--loss
    cross-entropy against an extra target input); PyTorch's reference is
    F.cross_entropy of the scores."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(),
                                 nn.Linear(32, 5))

    def forward(self, x, labels=None):
        scores = self.net(x)
        return scores if labels is None else F.cross_entropy(scores, labels)


class Regressor(Classifier):
    """The same with --loss mse: PyTorch's reference is the mean squared
    error of the outputs."""

    def forward(self, x, y=None):
        out = self.net(x)
        return out if y is None else ((out - y) ** 2).mean()


def classifier_batches(steps, rng):
    return [(rng.standard_normal((8, 16)).astype(np.float32),
             rng.integers(0, 5, (8,)).astype(np.int64)) for _ in range(steps)]


def regressor_batches(steps, rng):
    return [(rng.standard_normal((8, 16)).astype(np.float32),
             rng.standard_normal((8, 5)).astype(np.float32))
            for _ in range(steps)]


def mlp_batches(steps, rng):
    return [(rng.standard_normal((8, 16)).astype(np.float32),
             rng.standard_normal((8, 4)).astype(np.float32))
            for _ in range(steps)]


class Block(nn.Module):
    """A GPT-2 block: fused QKV, causal mask by masked_fill on a tril
    buffer, scaling by division, tanh GELU; with `dropout`, GPT-2's
    dropouts of the attention probabilities and of both residual
    branches."""

    def __init__(self, d, heads, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.drop = nn.Dropout(dropout) if dropout else nn.Identity()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        # No QKV bias (as nanoGPT's bias=False, LLaMA): the key bias has a
        # zero gradient (softmax ignores a constant per row), whose rounding
        # noise AdamW turns into steps of about lr, in PyTorch as here, so
        # no two implementations agree on it.
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x, causal):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        att = att.masked_fill(causal == 0, float("-inf")).softmax(dim=-1)
        y = (self.drop(att) @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.drop(self.proj(y))
        return x + self.drop(
            self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh")))


class Gpt(nn.Module):
    """A character GPT returning its cross-entropy loss; the head is tied to
    the token embedding."""

    def __init__(self, vocab=32, d=32, heads=2, layers=2, seq=16,
                 dropout=0.0):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.drop = nn.Dropout(dropout) if dropout else nn.Identity()
        self.blocks = nn.ModuleList(Block(d, heads, dropout)
                                    for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.register_buffer("causal", torch.tril(torch.ones(seq, seq)))
        for e in (self.wte, self.wpe):
            nn.init.normal_(e.weight, std=0.02)  # GPT-2's
        self.logit_bias = None

    def forward(self, idx, targets):
        s = idx.shape[1]
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(s)))
        for block in self.blocks:
            x = block(x, self.causal)
        logits = self.ln(x) @ self.wte.weight.t()
        if self.logit_bias is not None:
            logits = logits + self.logit_bias
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1))


class GptDropout(Gpt):
    """The GPT with GPT-2's dropouts at 0.1 (embeddings, attention
    probabilities, residual branches): PyTorch trains it with pcc's
    generator (HashDropout), so both drop the same elements."""

    def __init__(self):
        super().__init__(dropout=0.1)


class GptOddVocab(Gpt):
    """GPT-2's case in small: 37 tokens, which no tensor-parallel degree
    divides (pcc pads them, as Megatron does), the tied head plus a trained
    bias over the vocabulary."""

    def __init__(self):
        super().__init__(vocab=37)
        self.logit_bias = nn.Parameter(0.1 * torch.randn(37))


class Conv1D(nn.Module):
    """Hugging Face GPT-2's Conv1D: a [in, out] weight applied by addmm to
    the input viewed as [B*S, in] (exported as Gemm on a flattened view)."""

    def __init__(self, nx, nf):
        super().__init__()
        self.weight = nn.Parameter(0.02 * torch.randn(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        out = torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight)
        return out.view(*x.shape[:-1], self.weight.shape[1])


class GptLong(Gpt):
    """The GPT at 8 x 2048 tokens of d 128: long enough that searched
    layouts run the MLP on the sequence split and gather its weights at use
    (docs/planner.md)."""

    def __init__(self):
        super().__init__(vocab=64, d=128, heads=2, layers=2, seq=2048)


def use_conv1d(blocks):
    """Replaces each block's nn.Linear layers by Conv1D ones."""
    for b in blocks:
        d = b.ln1.normalized_shape[0]
        b.qkv, b.proj = Conv1D(d, 3 * d), Conv1D(d, d)
        b.fc, b.out = Conv1D(d, 4 * d), Conv1D(4 * d, d)


class GptConv1D(GptLong):
    """GptLong with Hugging Face's Conv1D linear layers, which read their
    weights directly (no Transpose view)."""

    def __init__(self):
        super().__init__()
        use_conv1d(self.blocks)


class GptConv1DSmall(Gpt):
    """The test GPT (d 32, 8 x 16 tokens: 3D's rows split over 4 devices
    in each of 2 microbatches) with Hugging Face's Conv1D linear layers:
    GptConv1D's Gemms at a size 8 ranks train quickly."""

    def __init__(self):
        super().__init__()
        use_conv1d(self.blocks)


def small_conv1d_batches(steps, rng):
    return [(rng.integers(0, 32, (8, 16)).astype(np.int64),
             rng.integers(0, 32, (8, 16)).astype(np.int64))
            for _ in range(steps)]


def long_batches(steps, rng):
    return [(rng.integers(0, 64, (8, 2048)).astype(np.int64),
             rng.integers(0, 64, (8, 2048)).astype(np.int64))
            for _ in range(steps)]


class T5Loss(nn.Module):
    """The test models' T5-style encoder-decoder (relative position
    biases, RMS norms, cross-attention, tied embedding) returning its
    cross-entropy of the source tokens read from the target side (a copy
    through the cross-attention)."""

    def __init__(self):
        super().__init__()
        self.t5 = T5(vocab=32, d=32, heads=2, layers=2)

    def forward(self, source, target):
        logits = self.t5(source, target)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               source.reshape(-1))


# pcc.dropout's generator (runtime/include/pccrt/Dropout.h), for PyTorch to
# drop what pcc drops: element i of the whole tensor is kept unless the top
# 24 bits of SplitMix64(key + (i + 1) G) fall below ratio * 2^24, key from
# (seed, stream, step); a dropout's stream is FNV-1a of its ONNX node name.
MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z):
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & MASK64
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & MASK64
    return z ^ (z >> 31)


def mix64_array(z):
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def fnv1a(name):
    h = 14695981039346656037
    for byte in name.encode():
        h = ((h ^ byte) * 1099511628211) & MASK64
    return h


def dropout_keep(shape, ratio, seed, stream, step):
    key = mix64((mix64(mix64((seed + GOLDEN) & MASK64) ^ stream) +
                 step * GOLDEN) & MASK64)
    index = np.arange(1, int(np.prod(shape)) + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        draw = mix64_array(np.uint64(key) + index * np.uint64(GOLDEN))
    threshold = int(ratio * 16777216.0 + 0.5)
    return (draw >> np.uint64(40)) >= np.uint64(threshold)


class HashDropout(nn.Module):
    """nn.Dropout drawing pcc's masks: the k-th dropout a forward pass runs
    is the graph's k-th Dropout node (STREAMS), at step STEP."""
    streams, step, calls = [], 0, 0

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        stream = HashDropout.streams[HashDropout.calls]
        HashDropout.calls += 1
        keep = dropout_keep(x.shape, self.p, 0, stream, HashDropout.step)
        scale = np.float32(1.0 / (1.0 - self.p))
        mask = torch.from_numpy(keep.reshape(x.shape).astype(np.float32))
        return x * mask * float(scale)


def hash_dropouts(model, onnx_path):
    """`model` with each nn.Dropout drawing pcc's masks."""
    for module in list(model.modules()):
        for name, child in module.named_children():
            if isinstance(child, nn.Dropout) and child.p > 0:
                setattr(module, name, HashDropout(child.p))
    HashDropout.streams = [fnv1a(n.name) for n in onnx.load(onnx_path).graph.node
                           if n.op_type == "Dropout"]
    return model


def gpt_batches(steps, rng, vocab=32):
    return [(rng.integers(0, vocab, (4, 16)).astype(np.int64),
             rng.integers(0, vocab, (4, 16)).astype(np.int64))
            for _ in range(steps)]


def odd_vocab_batches(steps, rng):
    return gpt_batches(steps, rng, vocab=37)


class Vit(nn.Module):
    """A small ViT: patches by a strided Conv, a class token, learned
    positions, pre-norm nn.TransformerEncoderLayer blocks (exact GELU),
    a linear head on the class token, F.cross_entropy over 10 classes."""

    def __init__(self, d=32, heads=2, layers=2, patch=4, image=16):
        super().__init__()
        self.patches = nn.Conv2d(3, d, patch, stride=patch)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, d) * 0.02)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0,
                                       activation="gelu", batch_first=True,
                                       norm_first=True)
            for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, 10)

    def forward(self, images, labels):
        x = self.patches(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        for block in self.blocks:
            x = block(x)
        return F.cross_entropy(self.head(self.ln(x[:, 0])), labels)


def vit_batches(steps, rng):
    return [(rng.standard_normal((4, 3, 16, 16)).astype(np.float32),
             rng.integers(0, 10, (4,)).astype(np.int64))
            for _ in range(steps)]


class Cnn(nn.Module):
    """A small CNN: convolutions, max pooling (3x3, stride 2, padded, as
    ResNet's stem) and average pooling (2x2, padded, padding not counted),
    a linear head, F.cross_entropy over 10 classes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.head = nn.Linear(8 * 5 * 5, 10)

    def forward(self, images, labels):
        x = F.max_pool2d(F.relu(self.conv1(images)), 3, 2, 1)
        x = F.avg_pool2d(F.relu(self.conv2(x)), 2, 2, 1,
                         count_include_pad=False)
        return F.cross_entropy(self.head(x.flatten(1)), labels)


class Mobile(nn.Module):
    """Depthwise-separable and grouped convolutions (MobileNet, ResNeXt),
    ceil-mode max and average pooling and a strided slice, a linear head,
    F.cross_entropy over 10 classes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pointwise = nn.Conv2d(8, 16, 1)
        self.grouped = nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=4)
        self.head = nn.Linear(16 * 2 * 2 * 2, 10)

    def forward(self, images, labels):
        x = F.max_pool2d(F.relu(self.conv1(images)), 3, 2, ceil_mode=True)
        x = F.relu(self.pointwise(F.relu(self.depthwise(x))))
        x = F.relu(self.grouped(x))
        every_other = x[:, :, ::2, 1::2]
        pooled = F.avg_pool2d(x, 3, 2, ceil_mode=True)
        x = torch.cat([every_other, pooled], 1)
        return F.cross_entropy(self.head(x.flatten(1)), labels)


class ResNet(nn.Module):
    """A ResNet basic block: convolutions each followed by BatchNorm2d in
    training mode (batch statistics, running statistics updated), a
    residual, global average pooling, BatchNorm1d and a linear head,
    F.cross_entropy over 10 classes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.conv3 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(8, momentum=0.3)
        self.norm = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 10)

    def forward(self, images, labels):
        x = F.relu(self.bn1(self.conv1(images)))
        y = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(x + self.bn3(self.conv3(y)))
        x = self.norm(F.adaptive_avg_pool2d(x, 1).flatten(1))
        return F.cross_entropy(self.head(x), labels)


def cnn_batches(steps, rng):
    return [(rng.standard_normal((4, 3, 16, 16)).astype(np.float32),
             rng.integers(0, 10, (4,)).astype(np.int64))
            for _ in range(steps)]


MODELS = {"mlp": (Mlp, mlp_batches), "gpt": (Gpt, gpt_batches),
          "vit": (Vit, vit_batches), "cnn": (Cnn, cnn_batches),
          "mobile": (Mobile, cnn_batches), "resnet": (ResNet, cnn_batches),
          "gpt-dropout": (GptDropout, gpt_batches),
          "gpt-odd-vocab": (GptOddVocab, odd_vocab_batches),
          "gpt-long": (GptLong, long_batches),
          "gpt-conv1d": (GptConv1D, long_batches),
          "gpt-conv1d-small": (GptConv1DSmall, small_conv1d_batches),
          "t5": (T5Loss, gpt_batches),
          "classifier": (Classifier, classifier_batches),
          "regressor": (Regressor, regressor_batches)}
# Models exported without their loss: the loss pcc adds (--loss).
ADDED_LOSS = {"classifier": "cross-entropy", "regressor": "mse"}
# Elements whose true gradient is zero: the key part of an attention's input
# bias (softmax ignores a constant per row). AdamW turns their gradients'
# rounding noise into steps of about lr, in PyTorch as in pcc, so they are
# not compared (every other element is).
ZERO_GRADIENT = {"vit": [(f"blocks.{i}.self_attn.in_proj_bias", slice(32, 64))
                         for i in range(2)]}
# Initializers that PyTorch does not train (buffers).
FROZEN = {"gpt": ["causal"], "gpt-dropout": ["causal"],
          "gpt-odd-vocab": ["causal"], "gpt-long": ["causal"],
          "gpt-conv1d": ["causal"], "gpt-conv1d-small": ["causal"]}


def export(workdir, name, steps):
    """The model as ONNX, its batches, and the module to train in torch."""
    torch.manual_seed(0)
    make, batches_of = MODELS[name]
    model = make()
    batches = batches_of(steps, np.random.default_rng(0))
    path = os.path.join(workdir, "model.onnx")
    example = tuple(torch.from_numpy(a) for a in batches[0])
    if name in ADDED_LOSS:
        example = example[:1]  # the target is pcc's extra input
    torch.onnx.export(model, example, path, opset_version=14,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False,
                      input_names=[f"input_{i}" for i in range(len(example))],
                      output_names=["loss"])
    for k, batch in enumerate(batches):
        d = os.path.join(workdir, "batches", f"batch_{k}")
        os.makedirs(d, exist_ok=True)
        for i, a in enumerate(batch):
            t = numpy_helper.from_array(a, f"input_{i}")
            with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
                f.write(t.SerializeToString())
    return model, batches


def torch_train(model, batches, optimizer, steps, onnx_path):
    """PyTorch's losses per step, and its parameters after the last."""
    model = hash_dropouts(copy.deepcopy(model), onnx_path)
    opt = OPTIMIZERS[optimizer]["make"](model.parameters())
    losses = []
    for k in range(steps):
        batch = [torch.from_numpy(a) for a in batches[k % len(batches)]]
        # pcc counts steps from 1 (its pcc.step state).
        HashDropout.step, HashDropout.calls = k + 1, 0
        opt.zero_grad()
        loss = model(*batch)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    trained = {n: p.detach().numpy() for n, p in model.named_parameters()}
    # BatchNorm's running statistics: buffers the step updates.
    trained.update({n: b.numpy() for n, b in model.named_buffers()
                    if n.endswith(("running_mean", "running_var"))})
    return losses, trained


def run_steps(mpirun, ranks, out, batches, steps, extra=()):
    """The executable's losses per step (None on failure) and its output."""
    run = subprocess.run(
        mpirun + ["-np", str(ranks), os.path.join(out, "model"), "--train",
                  batches, "--steps", str(steps), "--threads", "1"] +
        list(extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=300)
    got = [json.loads(line)["loss"] for line in run.stdout.splitlines()
           if line.startswith("{")]
    return (got if run.returncode == 0 else None), run.stdout


def compare_parameters(saved, want, skip=(), rtol=1e-3, atol=1e-4):
    """Largest error of the saved parameters against PyTorch's, and whether
    all are within rtol, atol (but the `skip` (name, slice)s)."""
    ok, worst = True, 0.0
    want = {n: w.copy() for n, w in want.items()}
    for name, part in skip:
        want[name][part] = np.nan
    for name, w in want.items():
        path = os.path.join(saved, name.replace("%", "%25")
                            .replace("/", "%2F") + ".pb")
        if not os.path.exists(path):
            return False, float("inf"), name
        g = numpy_helper.to_array(onnx.load_tensor(path))
        if g.shape != w.shape:
            return False, float("inf"), name
        err = np.where(np.isnan(w), 0, np.abs(g - w))
        ok &= bool(np.all(err <= atol + rtol * np.abs(np.nan_to_num(w))))
        worst = max(worst, float(np.max(err)))
    return ok, worst, None


def strategy_plan(strategy, layout="megatron"):
    """pcc's flags for STRATEGY (run_strategies.py's, plus "zero=N",
    "recompute=full|selective" and the executable's "sched=gpipe"), the
    ranks it runs on, and the executable's flags."""
    parts = strategy.split(",")
    extra = {k: v for k, _, v in (p.partition("=") for p in parts)
             if k in ("zero", "sched", "recompute")}
    devices = ",".join(p for p in parts
                       if p.split("=")[0] not in ("zero", "sched", "recompute"))
    flags, ranks = ([], 1) if devices == "1" else strategy_flags(devices,
                                                                 layout)
    flags += ["--zero", extra["zero"]] if "zero" in extra else []
    flags += (["--recompute", extra["recompute"]] if "recompute" in extra
              else [])
    # The executable's pipeline schedule (1f1b by default); zb-h1 is
    # compiled for (pcc's --pp-schedule) and then the executable's default.
    exe = ["--pp-schedule", extra["sched"]] if "sched" in extra else []
    if extra.get("sched") == "zb-h1":
        flags += ["--pp-schedule", "zb-h1"]
    return flags, ranks, exe


def training_flags(name, optimizer, precision=None, cluster="dgx-a100"):
    """pcc's flags that train model `name` as torch_train trains it."""
    return (["--train", "--cluster", cluster] +
            OPTIMIZERS[optimizer]["flags"] +
            (["--precision", precision] if precision else []) +
            (["--freeze", ",".join(FROZEN[name])] if name in FROZEN else []) +
            (["--loss", ADDED_LOSS[name]] if name in ADDED_LOSS else []))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--mpirun", required=True)
    p.add_argument("--optimizer", required=True, choices=sorted(OPTIMIZERS))
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--layout", default="megatron")
    p.add_argument("--cluster", default="dgx-a100",
                   help="the cluster spec pcc plans for (a preset or a JSON "
                        "file)")
    # The bound is rtol 1e-3; fp32 steps agree far closer, and a
    # tight bound catches a wrong update that moves the loss a little.
    p.add_argument("--rtol", type=float, default=2e-5)
    p.add_argument("--atol", type=float, default=1e-6)
    p.add_argument("--precision", choices=("bf16", "fp16"),
                   help="train in 16 bits (pcc's --precision: f32 master "
                        "weights), against PyTorch's f32 training, with "
                        "--rtol/--atol for the losses and --param-rtol/"
                        "--param-atol for the parameters")
    p.add_argument("--param-rtol", type=float, default=1e-3)
    p.add_argument("--param-atol", type=float, default=1e-4)
    p.add_argument("--memory", action="store_true",
                   help="print each program's arena bytes (plan.json)")
    p.add_argument("--collectives", action="store_true",
                   help="print the compiled step's collectives (plan.json)")
    p.add_argument("--export", action="store_true",
                   help="also write the trained model (pcc export) and "
                        "compare its initializers with PyTorch's")
    p.add_argument("--resume", action="store_true",
                   help="also run half the steps, save, and resume the rest")
    p.add_argument("strategies", nargs="+")
    args = p.parse_args()
    workdir = os.path.join(args.workdir, args.model)
    os.makedirs(workdir, exist_ok=True)
    model, batches = export(workdir, args.model, args.steps)
    want, params = torch_train(model, batches, args.optimizer, args.steps,
                               os.path.join(workdir, "model.onnx"))
    mpirun = shlex.split(args.mpirun)
    batch_dir = os.path.join(workdir, "batches")
    for strategy in args.strategies:
        flags, ranks, exe = strategy_plan(strategy, args.layout)
        tag = (f"{args.optimizer}-" +
               (args.precision + "-" if args.precision else "") +
               ("" if args.layout == "megatron" else args.layout + "-") +
               strategy.replace("=", "").replace(",", "-"))
        out = os.path.join(workdir, "out-" + tag)
        subprocess.run(["pcc", os.path.join(workdir, "model.onnx"), "-o", out,
                        "--quiet"] +
                       training_flags(args.model, args.optimizer,
                                      args.precision, args.cluster) + flags,
                       check=True)
        saved = os.path.join(workdir, "saved-" + tag)
        got, log = run_steps(mpirun, ranks, out, batch_dir, args.steps,
                             exe + ["--save", saved])
        ok = got is not None and len(got) == len(want)
        worst = 0.0
        for g, w in zip(got or [], want):
            err = abs(g - w) if g is not None else float("inf")
            worst = max(worst, err / max(abs(w), 1e-30))
            ok &= err <= args.atol + args.rtol * abs(w)
        params_ok, param_err, missing = (
            compare_parameters(saved, params,
                               ZERO_GRADIENT.get(args.model, ()),
                               args.param_rtol, args.param_atol)
            if ok else (False, 0.0, None))
        line = (f"{strategy} ranks={ranks}: losses {'PASS' if ok else 'FAIL'} "
                f"max_rel_err={worst:.1e} ({len(got or [])} steps) " +
                (f"parameters {'PASS' if params_ok else 'FAIL'} "
                 f"max_abs_err={param_err:.1e}" if ok else
                 "parameters not compared"))
        if args.memory:
            with open(os.path.join(out, "plan.json")) as f:
                memory = json.load(f)["memory"]
            stages = memory.get("per_stage", [])
            line += " arena=%d" % max(
                [memory["arena_bytes"]] + [st["arena_bytes"] for st in stages])
            line += " stash=%d" % max(
                [0] + [st.get("stash_bytes_per_microbatch", 0)
                       for st in stages])
        if args.collectives:
            # A step's collectives: each microbatch's, and the update's once.
            with open(os.path.join(out, "plan.json")) as f:
                compiled = json.load(f)["collectives_per_step"]
            kinds = ["all_reduce", "reduce_scatter", "all_gather"]
            # What `pcc plan --train` predicts for the same flags (a plan
            # searches ZeRO stages; compiling applies one only when asked).
            report = json.loads(subprocess.run(
                ["pcc", "plan", os.path.join(workdir, "model.onnx"),
                 "--train", "--cluster", args.cluster, "--format", "json"] +
                flags + ([] if "--zero" in flags else ["--zero", "0"]) +
                (["--precision", args.precision] if args.precision else []) +
                (["--freeze", ",".join(FROZEN[args.model])]
                 if args.model in FROZEN else []) +
                (["--loss", ADDED_LOSS[args.model]]
                 if args.model in ADDED_LOSS else []),
                check=True, stdout=subprocess.PIPE,
                text=True).stdout)
            predicted = {}
            for c in report["collectives"]:
                predicted[c["kind"]] = (predicted.get(c["kind"], 0) +
                                        c["count_per_step"])
            # All-to-alls (sequence parallelism's) where either has any.
            if compiled.get("all_to_all", 0) or predicted.get("all_to_all", 0):
                kinds.append("all_to_all")
            line += " collectives: " + " ".join(
                f"{k}={compiled.get(k, 0)}" for k in kinds)
            line += " predicted: " + " ".join(
                f"{k}={predicted.get(k, 0)}" for k in kinds)
        if args.export and params_ok:
            # pcc export: the model with the saved initializers, whose
            # values are PyTorch's trained parameters.
            trained = os.path.join(workdir, "trained-" + tag + ".onnx")
            if os.path.exists(trained):
                os.remove(trained)
            subprocess.run(["pcc", "export", os.path.join(workdir, "model.onnx"),
                            "--weights", saved, "-o", trained], check=True,
                           stdout=subprocess.DEVNULL)
            inits = {t.name: numpy_helper.to_array(t)
                     for t in onnx.load(trained).graph.initializer}
            same = all(n in inits and np.allclose(inits[n], w, rtol=1e-3,
                                                  atol=1e-4)
                       for n, w in params.items())
            line += f" exported {'PASS' if same else 'FAIL'}"
        if args.resume and ok:
            # Half the steps, saved; the rest resumed from the save.
            half = args.steps // 2
            part = os.path.join(workdir, "part-" + tag)
            first, _ = run_steps(mpirun, ranks, out, batch_dir, half,
                                 exe + ["--save", part])
            rest, _ = run_steps(mpirun, ranks, out, batch_dir,
                                args.steps - half, exe + ["--resume", part])
            same = first is not None and rest is not None and \
                first + rest == got
            line += f" resumed {'PASS' if same else 'FAIL'}"
        print(line, flush=True)
        if not ok or not params_ok:
            print(f"  pcc:     {got}\n  pytorch: {want}\n"
                  f"  missing parameter: {missing}\n{log}", flush=True)

if __name__ == "__main__":
    main()

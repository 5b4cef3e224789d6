#!/usr/bin/env python3
"""A training step on one GPU: pcc --train --target cuda against PyTorch.

Two halves, as bench_cuda.py's (pcc has no GPU here; the GPU machine has no
pcc):

  bench_cuda_train.py build PCC OUT [--only CASE...]
      exports the GPTs below returning their cross-entropy (training mode,
      no constant folding: torch 1.13 here), compiles each with `pcc --train
      --target cuda --optimizer adamw` in bf16 (f32 master weights and
      states, 16-bit activations: torch.autocast's split) and fp32, and
      writes one batch of seeded tokens
  bench_cuda_train.py run OUT [--steps N] [--repeats R] [--compile]
      on the GPU machine (python3 with torch): trains each program for N
      steps on that batch (its per-step "ms" lines, median after 3 warm-up
      steps) and PyTorch on the same module, weights and batch: AdamW
      (fused), bf16 autocast for the bf16 cases, attention by
      scaled_dot_product_attention (is_causal), zero_grad + forward +
      backward + step timed by CUDA events, median after 3 warm-up steps;
      with --compile also torch.compile of that module. R alternating
      repeats, median of the medians; the first step's loss of both is
      printed (same weights, same batch).

The GPT-2 case is issue 15's benchmark shape: 12 layers, d 768, 12 heads,
vocabulary 50304, batch 8 x 1024 tokens, tied embedding and head (nanoGPT's
model). Weights are bench_cuda.py's seeded tiles, so weights.bin (with its
zero optimizer states) compresses to a few MB for the trip.
"""
import argparse
import json
import lzma
import os
import shutil
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_cuda import fill_params  # noqa: E402

LR = 1e-4


def gpt_class():
    """nanoGPT's GPT (fused QKV, causal mask by masked_fill on a tril
    buffer, tanh GELU, tied head) returning its cross-entropy; `sdpa` runs
    attention as PyTorch's fused kernel (the peer; torch 1.13's export has
    none)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x, causal, sdpa):
            b, s, d = x.shape
            q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
                       for t in self.qkv(self.ln1(x)).split(d, dim=2))
            if sdpa:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) / (d // self.heads) ** 0.5
                att = att.masked_fill(causal[:s, :s] == 0, float("-inf"))
                y = att.softmax(dim=-1) @ v
            x = x + self.proj(y.transpose(1, 2).reshape(b, s, d))
            return x + self.out(
                F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class Gpt(nn.Module):
        def __init__(self, vocab, d, heads, layers, seq):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
            self.ln = nn.LayerNorm(d)
            self.register_buffer("causal", torch.tril(torch.ones(seq, seq)))
            self.sdpa = False

        def forward(self, idx, targets):
            s = idx.shape[1]
            pos = torch.arange(s, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.blocks:
                x = block(x, self.causal, self.sdpa)
            logits = self.ln(x) @ self.wte.weight.t()
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   targets.reshape(-1))

    return Gpt


# name -> (GPT's arguments, batch, sequence).
MODELS = {
    "gpt2": (dict(vocab=50304, d=768, heads=12, layers=12, seq=1024), 8, 1024),
    "gpt": (dict(vocab=8192, d=1024, heads=16, layers=4, seq=512), 8, 512),
}
# case -> (model, precision).
CASES = {"gpt2-bf16": ("gpt2", "bf16"), "gpt2-fp32": ("gpt2", "fp32"),
         "gpt-bf16": ("gpt", "bf16")}


def make_model(name):
    args, _, _ = MODELS[name]
    return fill_params(gpt_class()(**args)).train()


def make_batch(name):
    args, batch, seq = MODELS[name]
    rs = np.random.RandomState(0)
    return [rs.randint(0, args["vocab"], size=(batch, seq)).astype(np.int64)
            for _ in range(2)]


def build(pcc, out, only):
    import torch
    from onnx import numpy_helper
    os.makedirs(out, exist_ok=True)
    exported = {}
    for case, (name, precision) in CASES.items():
        if only and case not in only:
            continue
        if name not in exported:
            path = os.path.join(out, name + ".onnx")
            batch = make_batch(name)
            torch.onnx.export(make_model(name),
                              tuple(torch.from_numpy(a) for a in batch), path,
                              opset_version=14,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False)
            d = os.path.join(out, name + "-batches", "batch_0")
            os.makedirs(d, exist_ok=True)
            for i, a in enumerate(batch):
                with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(a).SerializeToString())
            exported[name] = path
        d = os.path.join(out, case)
        subprocess.run([pcc, exported[name], "--target", "cuda", "--quiet",
                        "-o", d, "--train", "--optimizer", "adamw", "--lr",
                        str(LR), "--freeze", "causal", "--precision",
                        precision], check=True)
        w = os.path.join(d, "weights.bin")
        with open(w, "rb") as src, lzma.open(w + ".xz", "wb",
                                             preset=1) as dst:
            shutil.copyfileobj(src, dst, 1 << 24)
        os.remove(w)
    for path in exported.values():
        os.remove(path)
    print(f"built {sorted(c for c in CASES if not only or c in only)} in {out}")


def pcc_steps(exe, batches, steps):
    """Median step ms after 3 warm-up steps, and the first step's loss."""
    r = subprocess.run([exe, "--train", batches, "--steps", str(steps)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    lines = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode or len(lines) != steps:
        raise RuntimeError(r.stdout.strip().splitlines()[-1])
    return statistics.median(l["ms"] for l in lines[3:]), lines[0]["loss"]


def torch_steps(model, batch, steps, bf16, compiled=False):
    """PyTorch's median step ms after 3 warm-up steps, and its first loss."""
    import torch
    opt = torch.optim.AdamW(model.parameters(), lr=LR, fused=True)
    step_fn = torch.compile(model) if compiled else model
    ms, first = [], None
    for _ in range(steps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = step_fn(*batch)
        loss.backward()
        opt.step()
        b.record()
        torch.cuda.synchronize()
        ms.append(a.elapsed_time(b))
        first = loss.item() if first is None else first
    return statistics.median(ms[3:]), first


def run(out, steps, repeats, only, compile_peer):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| case | pcc ms | torch sdpa ms | sdpa/pcc "
          + ("| torch.compile ms | compile/pcc " if compile_peer else "")
          + "| first loss pcc | first loss torch |")
    print("|---" * (8 if compile_peer else 6) + "|")
    rows = []
    for case, (name, precision) in CASES.items():
        d = os.path.join(out, case)
        if (only and case not in only) or not os.path.isdir(d):
            continue
        w = os.path.join(d, "weights.bin")
        if not os.path.exists(w):
            with lzma.open(w + ".xz", "rb") as src, open(w, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 24)
        batches = os.path.join(out, name + "-batches")
        batch = [torch.from_numpy(a).cuda() for a in make_batch(name)]
        bf16 = precision == "bf16"
        pcc_ms, sdpa_ms, compile_ms = [], [], []
        for _ in range(repeats):
            ms, pcc_loss = pcc_steps(os.path.join(d, "model"), batches, steps)
            pcc_ms.append(ms)
            model = make_model(name).cuda()
            model.sdpa = True
            ms, torch_loss = torch_steps(model, batch, steps, bf16)
            sdpa_ms.append(ms)
            if compile_peer:
                model = make_model(name).cuda()
                model.sdpa = True
                compile_ms.append(torch_steps(model, batch, steps, bf16,
                                              compiled=True)[0])
            del model
            torch.cuda.empty_cache()
        p, s = statistics.median(pcc_ms), statistics.median(sdpa_ms)
        row = {"case": case, "pcc_ms": p, "torch_sdpa_ms": s,
               "pcc_first_loss": pcc_loss, "torch_first_loss": torch_loss}
        extra = ""
        if compile_ms:
            row["torch_compile_ms"] = c = statistics.median(compile_ms)
            extra = f"| {c:.2f} | {c / p:.2f} "
        rows.append(row)
        print(f"| {case} | {p:.2f} | {s:.2f} | {s / p:.2f} {extra}"
              f"| {pcc_loss:.5f} | {torch_loss:.5f} |", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("pcc")
    b.add_argument("out")
    b.add_argument("--only", nargs="+", choices=sorted(CASES))
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--steps", type=int, default=10)
    r.add_argument("--repeats", type=int, default=3)
    r.add_argument("--only", nargs="+", choices=sorted(CASES))
    r.add_argument("--compile", action="store_true")
    r.add_argument("--json", help="also write the rows here")
    a = ap.parse_args()
    if a.cmd == "build":
        build(a.pcc, a.out, a.only)
    else:
        rows = run(a.out, a.steps, a.repeats, a.only, a.compile)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

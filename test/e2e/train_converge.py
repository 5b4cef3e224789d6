#!/usr/bin/env python3
"""Convergence: a small character GPT trained for a few hundred steps on a
text file that Debian ships (base-files' GPL-3), by pcc on several ranks and
by PyTorch, ends at the same loss.

Usage: train_converge.py WORKDIR --mpirun CMD [--steps 300] [--text FILE]
                         STRATEGY

The text's bytes are the tokens (vocabulary 128: it is ASCII); batch k is 8
windows of 32 tokens at offsets drawn from a seeded generator, targets the
next tokens; 60 batches are written and step k uses batch k mod 60, in pcc
and in PyTorch alike. AdamW at lr 3e-3. Prints
  dp=2,tp=2 ranks=4: first 4.87 last 2.41 (pytorch 2.41) rel_diff 0.3% PASS
where first/last are the means of the first and last 20 steps' losses;
PASS needs |pcc - pytorch| <= 2% of PyTorch's and a loss that fell.
"""
import argparse
import os
import shlex
import subprocess
import sys

import numpy as np
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_strategies import strategy_flags  # noqa: E402
from train_check import Gpt, run_steps  # noqa: E402

VOCAB, SEQ, BATCH, BATCHES = 128, 32, 8, 60


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--mpirun", required=True)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    p.add_argument("strategy")
    args = p.parse_args()
    data = np.frombuffer(open(args.text, "rb").read(), np.uint8)
    data = np.minimum(data, VOCAB - 1).astype(np.int64)
    rng = np.random.default_rng(0)
    batches = []
    for k in range(BATCHES):
        at = rng.integers(0, len(data) - SEQ - 1, BATCH)
        x = np.stack([data[a:a + SEQ] for a in at])
        y = np.stack([data[a + 1:a + SEQ + 1] for a in at])
        batches.append((x, y))
        d = os.path.join(args.workdir, "batches", f"batch_{k}")
        os.makedirs(d, exist_ok=True)
        for i, a in enumerate((x, y)):
            with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a).SerializeToString())
    torch.manual_seed(0)
    model = Gpt(vocab=VOCAB, d=48, heads=4, layers=2, seq=SEQ)
    path = os.path.join(args.workdir, "model.onnx")
    example = tuple(torch.from_numpy(a) for a in batches[0])
    torch.onnx.export(model, example, path, opset_version=14,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    flags, ranks = ([], 1) if args.strategy == "1" else strategy_flags(
        args.strategy, "megatron")
    out = os.path.join(args.workdir, "out")
    subprocess.run(["pcc", path, "-o", out, "--quiet", "--train",
                    "--optimizer", "adamw", "--lr", "3e-3", "--freeze",
                    "causal"] + flags, check=True)
    # PyTorch first: the same model, batches and optimizer.
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    want = []
    for k in range(args.steps):
        opt.zero_grad()
        loss = model(*(torch.from_numpy(a) for a in batches[k % BATCHES]))
        want.append(loss.item())
        loss.backward()
        opt.step()
    got, log = run_steps(shlex.split(args.mpirun), ranks, out,
                         os.path.join(args.workdir, "batches"), args.steps)
    if got is None or len(got) != args.steps:
        print(f"{args.strategy} ranks={ranks}: FAIL\n{log}")
        return
    first, last = np.mean(got[:20]), np.mean(got[-20:])
    ref = np.mean(want[-20:])
    diff = abs(last - ref) / ref
    ok = diff <= 0.02 and last < 0.8 * first
    print(f"{args.strategy} ranks={ranks}: first {first:.2f} last {last:.2f} "
          f"(pytorch {ref:.2f}) rel_diff {100 * diff:.1f}% "
          f"{'PASS' if ok else 'FAIL'}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Training step time on CPU: pcc --train executables against PyTorch eager.

For an MLP (MSE loss) and a character GPT (cross-entropy, tied head; the
model of test/e2e/train_check.py at a larger size), exports the model
returning its loss, compiles `pcc --train` (AdamW, 1 rank), and times a
step both ways with the same thread count: pcc's per-step "ms" lines
(median after 3 warm-up steps), PyTorch's zero_grad + forward + backward +
AdamW step (median after 3 warm-up steps). Each side runs in its own
process with OPENBLAS_NUM_THREADS and OMP_NUM_THREADS set; REPEATS rounds
alternate the two, and the median of the rounds' medians is reported.

With --precision bf16, pcc compiles with `--precision bf16` (f32 master
weights, 16-bit activations) and PyTorch runs its forward under
`torch.autocast("cpu", dtype=torch.bfloat16)` (its CPU mixed precision).

usage: bench_train.py WORK_DIR [--threads 1 2] [--steps 20] [--repeats 3]
                      [--precision bf16]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "e2e"))
from train_check import Gpt  # noqa: E402


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(),
                                 nn.Linear(4096, 1024))

    def forward(self, x, y):
        return ((self.net(x) - y) ** 2).mean()


def models():
    rng = np.random.default_rng(0)
    yield "mlp", Mlp(), (rng.standard_normal((64, 1024)).astype(np.float32),
                         rng.standard_normal((64, 1024)).astype(np.float32))
    gpt = Gpt(vocab=256, d=256, heads=4, layers=4, seq=128)
    yield ("gpt", gpt, (rng.integers(0, 256, (8, 128)).astype(np.int64),
                        rng.integers(0, 256, (8, 128)).astype(np.int64)))


def torch_step_ms(name, workdir, steps, precision):
    """PyTorch's median step time (run in a child process, --torch)."""
    model, batch = next((m, b) for n, m, b in models() if n == name)
    model.load_state_dict(torch.load(os.path.join(workdir, "state.pt")))
    batch = [torch.from_numpy(a) for a in batch]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16,
                              enabled=precision == "bf16")
    ms = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        with autocast:
            loss = model(*batch)
        loss.backward()
        opt.step()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms[3:])


def env_for(threads):
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = str(threads)
    return env


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--torch":
        print(torch_step_ms(sys.argv[2], sys.argv[3], int(sys.argv[4]),
                            sys.argv[5]))
        return
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    args = p.parse_args()
    rows = []
    for name, model, batch in models():
        d = os.path.join(args.workdir, name)
        os.makedirs(os.path.join(d, "batches", "batch_0"), exist_ok=True)
        example = tuple(torch.from_numpy(a) for a in batch)
        torch.onnx.export(model, example, os.path.join(d, "model.onnx"),
                          opset_version=14,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        for i, a in enumerate(batch):
            with open(os.path.join(d, "batches", "batch_0",
                                   f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a).SerializeToString())
        torch.save(model.state_dict(), os.path.join(d, "state.pt"))
        freeze = ["--freeze", "causal"] if name == "gpt" else []
        subprocess.run(["pcc", os.path.join(d, "model.onnx"), "-o",
                        os.path.join(d, "out"), "--quiet", "--train",
                        "--optimizer", "adamw", "--lr", "1e-4",
                        "--precision", args.precision] + freeze,
                       check=True)
        for threads in args.threads:
            pcc_ms, torch_ms = [], []
            for _ in range(args.repeats):
                run = subprocess.run(
                    [os.path.join(d, "out", "model"), "--train",
                     os.path.join(d, "batches"), "--steps", str(args.steps),
                     "--threads", str(threads)], env=env_for(threads),
                    stdout=subprocess.PIPE, text=True, check=True)
                steps = [json.loads(l)["ms"] for l in run.stdout.splitlines()
                         if l.startswith("{")]
                pcc_ms.append(statistics.median(steps[3:]))
                run = subprocess.run(
                    [sys.executable, __file__, "--torch", name, d,
                     str(args.steps), args.precision], env=env_for(threads),
                    stdout=subprocess.PIPE, text=True, check=True)
                torch_ms.append(float(run.stdout.strip().splitlines()[-1]))
            pm, tm = statistics.median(pcc_ms), statistics.median(torch_ms)
            rows.append((name, threads, pm, tm))
            print(f"{name} threads={threads}: pcc {pm:.2f} ms, PyTorch "
                  f"{tm:.2f} ms, pcc speed {tm / pm:.2f}x PyTorch's",
                  flush=True)
    print("| model | threads | pcc ms/step | PyTorch ms/step | speed vs PyTorch |")
    print("| --- | --- | --- | --- | --- |")
    for name, threads, pm, tm in rows:
        print(f"| {name} | {threads} | {pm:.2f} | {tm:.2f} | {tm / pm:.2f}x |")


if __name__ == "__main__":
    main()

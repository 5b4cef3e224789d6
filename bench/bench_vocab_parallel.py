#!/usr/bin/env python3
"""Training step of a GPT with a large vocabulary under Megatron tp2: the
vocabulary-parallel cross-entropy's effect, measured.

Exports the character GPT of test/e2e/train_check.py at vocabulary 16384
(d 256, 4 heads, 2 layers, 8 x 128 tokens, tied head, F.cross_entropy),
compiles `pcc --train --tp 2 --tp-layout megatron` with each pcc given
(the current build, and with --before an older build to compare), and runs
each executable on 2 MPI ranks (--threads 1), alternating them for
--repeats rounds: the median step time after 3 warm-up steps, the median
of the rounds, the arena per rank (plan.json) and the first steps' losses
(equal across builds). PyTorch eager on one process (1 thread) runs the
same step in the same session, as a reference point.

usage: bench_vocab_parallel.py WORK_DIR [--before OLD_PCC] [--repeats 3]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "e2e"))
from train_check import Gpt  # noqa: E402

VOCAB, STEPS = 16384, 10


def export(work):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = Gpt(vocab=VOCAB, d=256, heads=4, layers=2, seq=128)
    batch = tuple(rng.integers(0, VOCAB, (8, 128)).astype(np.int64)
                  for _ in range(2))
    os.makedirs(os.path.join(work, "batches", "batch_0"), exist_ok=True)
    torch.onnx.export(model, tuple(torch.from_numpy(a) for a in batch),
                      os.path.join(work, "model.onnx"), opset_version=14,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    for i, a in enumerate(batch):
        with open(os.path.join(work, "batches", "batch_0", f"input_{i}.pb"),
                  "wb") as f:
            f.write(numpy_helper.from_array(a).SerializeToString())
    return model, batch


def torch_ms(model, batch):
    torch.set_num_threads(1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = [torch.from_numpy(a) for a in batch]
    ms = []
    for _ in range(STEPS):
        t0 = time.perf_counter()
        opt.zero_grad()
        model(*batch).backward()
        opt.step()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms[3:])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--before", help="an older pcc to compare with")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    model, batch = export(args.workdir)
    mpirun = os.path.join(HERE, "..", "test", "e2e", "mpirun.sh")
    builds = {"pcc": shutil.which("pcc")}
    if args.before:
        builds["before"] = args.before
    runs, arena = {}, {}
    for name, pcc in builds.items():
        out = os.path.join(args.workdir, "out-" + name)
        subprocess.run([pcc, os.path.join(args.workdir, "model.onnx"), "-o",
                        out, "--quiet", "--train", "--optimizer", "adamw",
                        "--lr", "1e-3", "--freeze", "causal", "--tp", "2",
                        "--tp-mode", "1d", "--tp-layout", "megatron"],
                       check=True)
        with open(os.path.join(out, "plan.json")) as f:
            arena[name] = json.load(f)["memory"]["arena_bytes"]
        runs[name] = []
    losses = {}
    for _ in range(args.repeats):
        for name in builds:
            out = subprocess.run(
                [mpirun, "-np", "2",
                 os.path.join(args.workdir, "out-" + name, "model"),
                 "--train", os.path.join(args.workdir, "batches"), "--steps",
                 str(STEPS), "--threads", "1"],
                capture_output=True, text=True, check=True).stdout
            steps = [json.loads(l) for l in out.splitlines()
                     if l.startswith("{")]
            runs[name].append(statistics.median(s["ms"] for s in steps[3:]))
            losses[name] = [s["loss"] for s in steps[:3]]
    ref = torch_ms(model, batch)
    for name in builds:
        print(f"{name}: tp2 step {statistics.median(runs[name]):.1f} ms "
              f"(rounds {', '.join('%.1f' % r for r in runs[name])}), "
              f"arena {arena[name] / 1e6:.1f} MB per rank, "
              f"losses {', '.join('%.6f' % l for l in losses[name])}")
    print(f"PyTorch eager, 1 process, 1 thread: {ref:.1f} ms")


if __name__ == "__main__":
    main()

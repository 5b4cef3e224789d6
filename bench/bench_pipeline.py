#!/usr/bin/env python3
"""Pipelined training steps on CPU ranks: 1F1B, GPipe, interleaved 1F1B
and zero-bubble ZB-H1.

An MLP of LAYERS nn.Linear(1024, 1024) + tanh layers, batch 256, MSE, SGD,
exported in training mode, compiled by `pcc --train` as one rank, as a
2-stage pipeline with 4 microbatches (1F1B; the same executable with
--pp-schedule gpipe), interleaved with 2 chunks per device (--pp-virtual
2), as ZB-H1 (--pp-schedule zb-h1; the same executable under the
executable's --pp-schedule 1f1b, each W right after its B, shows what the
split alone costs), and as dp2; each run with `mpirun -np K model --train DIR --steps S
--threads 1` (one BLAS thread per rank). Per run the median ms/step after 2
warm-up steps; REPEATS rounds alternate the plans, and the median of the
rounds is reported with its ratio to one rank (measured in the same round).

usage: bench_pipeline.py WORK_DIR [--steps 6] [--repeats 3] [--layers 8]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MPIRUN = os.path.join(HERE, "..", "test", "e2e", "mpirun.sh")


class Mlp(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.net = nn.Sequential(*[m for _ in range(layers)
                                   for m in (nn.Linear(1024, 1024),
                                             nn.Tanh())])

    def forward(self, x, y):
        return ((self.net(x) - y) ** 2).mean()


PLANS = [
    # label, pcc flags, ranks, executable flags
    ("1 rank", [], 1, []),
    ("pp2 x mb4, 1F1B", ["--pp", "2", "--microbatches", "4",
                         "--pp-virtual", "1", "--pp-schedule", "1f1b"], 2, []),
    ("pp2 x mb4, GPipe", None, 2, ["--pp-schedule", "gpipe"]),
    ("pp2 x mb4 x v2, interleaved 1F1B",
     ["--pp", "2", "--microbatches", "4", "--pp-virtual", "2"], 2, []),
    ("pp2 x mb4, ZB-H1", ["--pp", "2", "--microbatches", "4",
                          "--pp-schedule", "zb-h1"], 2, []),
    ("pp2 x mb4, ZB-H1 program run 1F1B", None, 2,
     ["--pp-schedule", "1f1b"]),
    ("dp2", ["--dp", "2"], 2, []),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--layers", type=int, default=8)
    args = p.parse_args()
    d = args.workdir
    os.makedirs(os.path.join(d, "batches", "batch_0"), exist_ok=True)
    rng = np.random.default_rng(0)
    batch = (rng.standard_normal((256, 1024)).astype(np.float32),
             rng.standard_normal((256, 1024)).astype(np.float32))
    model = Mlp(args.layers)
    torch.onnx.export(model, tuple(torch.from_numpy(a) for a in batch),
                      os.path.join(d, "model.onnx"), opset_version=14,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    for i, a in enumerate(batch):
        with open(os.path.join(d, "batches", "batch_0", f"input_{i}.pb"),
                  "wb") as f:
            f.write(numpy_helper.from_array(a).SerializeToString())
    outs = []
    for k, (label, flags, ranks, _) in enumerate(PLANS):
        if flags is None:  # the previous plan's executable
            outs.append(outs[-1])
            continue
        out = os.path.join(d, f"out{k}")
        subprocess.run(["pcc", os.path.join(d, "model.onnx"), "-o", out,
                        "--quiet", "--train", "--optimizer", "sgd", "--lr",
                        "0.01"] + flags, check=True)
        outs.append(out)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    times = {label: [] for label, *_ in PLANS}
    for _ in range(args.repeats):
        for (label, _, ranks, exe), out in zip(PLANS, outs):
            run = subprocess.run(
                [MPIRUN, "-np", str(ranks), os.path.join(out, "model"),
                 "--train", os.path.join(d, "batches"), "--steps",
                 str(args.steps), "--threads", "1"] + exe, env=env,
                stdout=subprocess.PIPE, text=True, check=True)
            ms = [json.loads(line)["ms"] for line in run.stdout.splitlines()
                  if line.startswith("{")]
            times[label].append(statistics.median(ms[2:]))
            print(f"{label}: {times[label][-1]:.1f} ms", file=sys.stderr,
                  flush=True)
    one = statistics.median(times["1 rank"])
    print("| plan | ranks | ms/step (rounds) | median | vs 1 rank |")
    print("| --- | --- | --- | --- | --- |")
    for label, _, ranks, _ in PLANS:
        med = statistics.median(times[label])
        rounds = ", ".join(f"{t:.1f}" for t in times[label])
        print(f"| {label} | {ranks} | {rounds} | {med:.1f} | "
              f"{one / med:.2f}x |")


if __name__ == "__main__":
    main()

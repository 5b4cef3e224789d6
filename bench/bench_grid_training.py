#!/usr/bin/env python3
"""Training step of the large-vocabulary GPT of bench_vocab_parallel.py on
Colossal-AI's tensor grids: 2D (2 x 2, 4 ranks) and 3D (2 x 2 x 2, 8 ranks).

Compiles `pcc --train --tp 4 --tp-mode 2d` and `--tp 8 --tp-mode 3d`
(AdamW, the causal mask frozen) with each pcc given (the current build, and
with --before an older build to compare), runs each executable
(--threads 1; oversubscribed where the machine has fewer cores than ranks:
the figures compare builds, nothing else), alternating the builds for
--repeats rounds: the median step time after 3 warm-up steps, the median of
the rounds, the arena per rank and the collectives a step runs (plan.json),
and the last step's loss (equal across builds).

usage: bench_grid_training.py WORK_DIR [--before OLD_PCC] [--repeats 2]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_vocab_parallel import STEPS, export  # noqa: E402

GRIDS = {"2d": (4, ["--tp", "4", "--tp-mode", "2d"]),
         "3d": (8, ["--tp", "8", "--tp-mode", "3d"])}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--before", help="an older pcc to compare with")
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    if not os.path.exists(os.path.join(args.workdir, "model.onnx")):
        export(args.workdir)
    mpirun = os.path.join(HERE, "..", "test", "e2e", "mpirun.sh")
    builds = {"pcc": shutil.which("pcc")}
    if args.before:
        builds["before"] = args.before
    for grid, (ranks, flags) in GRIDS.items():
        runs, plans, loss = {}, {}, {}
        for name, pcc in builds.items():
            out = os.path.join(args.workdir, f"out-{grid}-{name}")
            subprocess.run([pcc, os.path.join(args.workdir, "model.onnx"),
                            "-o", out, "--quiet", "--train", "--optimizer",
                            "adamw", "--lr", "1e-3", "--freeze", "causal"] +
                           flags, check=True)
            with open(os.path.join(out, "plan.json")) as f:
                plans[name] = json.load(f)
            runs[name] = []
        for _ in range(args.repeats):
            for name in builds:
                out = subprocess.run(
                    [mpirun, "-np", str(ranks), "--oversubscribe",
                     os.path.join(args.workdir, f"out-{grid}-{name}",
                                  "model"),
                     "--train", os.path.join(args.workdir, "batches"),
                     "--steps", str(STEPS), "--threads", "1"],
                    capture_output=True, text=True, check=True).stdout
                steps = [json.loads(l) for l in out.splitlines()
                         if l.startswith("{")]
                runs[name].append(statistics.median(s["ms"]
                                                    for s in steps[3:]))
                loss[name] = steps[-1]["loss"]
        for name in builds:
            c = plans[name]["collectives_per_step"]
            print(f"{grid} {name}: step {statistics.median(runs[name]):.1f} ms"
                  f" (rounds {', '.join('%.1f' % r for r in runs[name])}), "
                  f"arena {plans[name]['memory']['arena_bytes'] / 1e6:.1f} MB"
                  f" per rank, collectives {c.get('all_reduce', 0)} / "
                  f"{c.get('reduce_scatter', 0)} / {c.get('all_gather', 0)} "
                  f"/ {c.get('all_to_all', 0)}, last loss {loss[name]:.8f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Per-rank memory: what `pcc plan` predicts against what the compiled
program holds (plan.json: the weights each stage's device reads and its
arena, after liveness-based reuse).

Usage: memory_check.py MODEL.onnx [--cluster C] STRATEGY...
  STRATEGY as for test/e2e/run_strategies.py: "pp=4,mb=4", "tp=4", "dp=2,pp=2",
  "tp=4,mode=2d", "tp=8,mode=2.5d,depth=2".
Prints a Markdown table: strategy, weights (predicted, compiled, ratio),
activations / arena (predicted, compiled, ratio). Needs `pcc` on PATH.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "test", "e2e"))
from run_strategies import strategy_flags  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--cluster", default="dgx-a100")
    p.add_argument("strategies", nargs="+")
    args = p.parse_args()
    print("| strategy | weights predicted | compiled | ratio "
          "| activations predicted | arena compiled | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for strategy in args.strategies:
            # Megatron's layouts on a 1d tensor axis; 2D / 2.5D grids have
            # their own.
            layout = "searched" if "mode=" in strategy else "megatron"
            flags, devices = strategy_flags(strategy, layout)
            flags += ["--cluster", args.cluster]
            out = os.path.join(tmp, strategy.replace("=", "").replace(",", "-"))
            subprocess.run(["pcc", args.model, "-o", out, "--quiet"] + flags,
                           check=True)
            with open(os.path.join(out, "plan.json")) as f:
                stages = json.load(f)["memory"]["per_stage"]
            plan = json.loads(subprocess.run(
                ["pcc", "plan", args.model, "--format", "json", "--devices",
                 str(devices)] + flags,
                stdout=subprocess.PIPE, text=True, check=True).stdout)
            mem = plan["memory_per_device_bytes"]
            w = max(s["weights_bytes"] for s in stages)
            a = max(s["arena_bytes"] for s in stages)
            print(f"| {strategy} | {mem['weights']:.0f} | {w} | "
                  f"{mem['weights'] / w:.3f} | {mem['activations']:.0f} | {a} | "
                  f"{mem['activations'] / a:.3f} |")


if __name__ == "__main__":
    main()

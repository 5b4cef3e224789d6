#!/usr/bin/env python3
"""Per-rank memory: what `pcc plan` predicts against what the compiled
program holds (plan.json: the weights each stage's device reads and its
arena, after liveness-based reuse).

Usage: memory_check.py MODEL.onnx [--cluster C] [--train [--freeze N]]
                       STRATEGY...
  STRATEGY as for test/e2e/run_strategies.py: "pp=4,mb=4", "tp=4", "dp=2,pp=2",
  "tp=4,mode=2d", "tp=8,mode=2.5d,depth=2"; with --train also
  "recompute=full|selective"; "layout=megatron-sp|searched" for the 1d tensor
  axis's layouts (default Megatron's), "sched=zb-h1|1f1b|gpipe" for a
  pipeline's schedule.
Prints a Markdown table: strategy, weights (predicted, compiled, ratio),
activations / arena (predicted, compiled, ratio). With --train (AdamW) the
training step's: the weights file holds parameters and optimizer states, the
arena activations, gradients and temporaries, so the table compares totals:
predicted weights + optimizer state (gradients included) + activations,
against compiled weights + arena + the stash of the microbatches a pipeline
stage holds in flight. Needs `pcc` on PATH.
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
    p.add_argument("--train", action="store_true")
    p.add_argument("--freeze", default="")
    p.add_argument("strategies", nargs="+")
    args = p.parse_args()
    if args.train:
        print("| strategy | predicted: weights + state + activations = total "
              "| compiled: weights + arena + stash = total | ratio |")
        print("| --- | --- | --- | --- |")
    else:
        print("| strategy | weights predicted | compiled | ratio "
              "| activations predicted | arena compiled | ratio |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for strategy in args.strategies:
            # Megatron's layouts on a 1d tensor axis (or "layout=megatron-sp"
            # / "layout=searched"); 2D / 2.5D grids have their own.
            parts = strategy.split(",")
            option = {p.split("=")[0]: p.split("=")[1] for p in parts
                      if p.split("=")[0] in ("recompute", "layout", "sched")}
            layout = option.get("layout",
                                "searched" if "mode=" in strategy
                                else "megatron")
            extra = [p for p in parts if p.startswith("recompute=")]
            strategy_only = ",".join(
                p for p in parts if p.split("=")[0] not in option)
            flags, devices = (([], 1) if strategy_only == "1" else
                              strategy_flags(strategy_only, layout))
            flags += ["--cluster", args.cluster]
            if "sched" in option:
                flags += ["--pp-schedule", option["sched"]]
            if args.train:
                flags += ["--train", "--recompute",
                          extra[0].split("=")[1] if extra else "none"]
                flags += ["--freeze", args.freeze] if args.freeze else []
            out = os.path.join(tmp, strategy.replace("=", "").replace(",", "-"))
            subprocess.run(["pcc", args.model, "-o", out, "--quiet"] + flags +
                           (["--optimizer", "adamw"] if args.train else []),
                           check=True)
            with open(os.path.join(out, "plan.json")) as f:
                stages = json.load(f)["memory"]["per_stage"]
            plan = json.loads(subprocess.run(
                ["pcc", "plan", args.model, "--format", "json", "--devices",
                 str(devices)] + flags,
                stdout=subprocess.PIPE, text=True, check=True).stdout)
            mem = plan["memory_per_device_bytes"]
            if args.train:
                pp = plan["mesh"]["pp"]
                m = plan["microbatches"] if pp > 1 else 1
                # ZB-H1 (weight_stash_*): device k > 0 also keeps what up
                # to min(k, m - warm-up) + 1 deferred W parts read.
                def deferred(k):
                    warm = min(max(pp - k - 1, 0), m)
                    return min(min(k, m - warm) + 1, m) if k else 0
                held = [s["weights_bytes"] + s["arena_bytes"] +
                        s.get("stash_bytes_per_microbatch", 0) *
                        min(pp - k, m) +
                        s.get("weight_stash_bytes_per_microbatch", 0) *
                        deferred(k) for k, s in enumerate(stages)]
                k = max(range(len(held)), key=lambda i: held[i])
                st = stages[k]
                print(f"| {strategy} | {mem['weights']:.0f} + "
                      f"{mem['optimizer_state']:.0f} + "
                      f"{mem['activations']:.0f} = {mem['total']:.0f} | "
                      f"{st['weights_bytes']} + {st['arena_bytes']} + "
                      f"{held[k] - st['weights_bytes'] - st['arena_bytes']} = "
                      f"{held[k]} | {mem['total'] / held[k]:.3f} |")
                continue
            w = max(s["weights_bytes"] for s in stages)
            a = max(s["arena_bytes"] for s in stages)
            print(f"| {strategy} | {mem['weights']:.0f} | {w} | "
                  f"{mem['weights'] / w:.3f} | {mem['activations']:.0f} | {a} | "
                  f"{mem['activations'] / a:.3f} |")


if __name__ == "__main__":
    main()

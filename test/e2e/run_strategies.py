#!/usr/bin/env python3
"""Compile one exported model for several forced strategies and run each
under mpirun against the model's reference outputs.

Usage: run_strategies.py MODEL_DIR --mpirun "CMD" [--layout searched|megatron]
                         [--cluster C] STRATEGY...
  STRATEGY is dp=N, tp=N or both as "dp=2,tp=4".

For each strategy prints one line:
  dp=2,tp=4 ranks=8: check: PASS collectives: all_reduce=5 all_gather=0 ...
  predicted: all_reduce=5 all_gather=0 reduce_scatter=0
(the executable's last line, the collective counts from plan.json, and the
counts `pcc plan` predicts for the same strategy on the same cluster), so a
lit test can FileCheck numerics, the communication pattern, and that the
planner costs exactly what the compiler emits.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

KINDS = ("all_reduce", "all_gather", "reduce_scatter")


def predicted_counts(model, flags):
    plan = subprocess.run(
        ["pcc", "plan", model, "--format", "json", "--pp", "1", "--sp", "1",
         "--tp-mode", "1d"] + flags,
        stdout=subprocess.PIPE, text=True, check=True)
    counts = dict.fromkeys(KINDS, 0)
    for c in json.loads(plan.stdout)["collectives"]:
        if c["kind"] in counts:
            counts[c["kind"]] += c["count_per_step"]
    return " ".join(f"{k}={v}" for k, v in counts.items())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model_dir")
    p.add_argument("--mpirun", required=True)
    p.add_argument("--layout", default="searched")
    # Layouts are chosen by cost, so tests pin the cluster they plan for.
    p.add_argument("--cluster", default="dgx-a100")
    p.add_argument("strategies", nargs="+")
    args = p.parse_args()
    mpirun = shlex.split(args.mpirun)
    model = os.path.join(args.model_dir, "model.onnx")
    for strategy in args.strategies:
        flags, ranks = ["--tp-layout", args.layout, "--cluster", args.cluster], 1
        for part in strategy.split(","):
            key, value = part.split("=")
            flags += ["--" + key, value]
            ranks *= int(value)
        out = os.path.join(args.model_dir, "out-" + args.layout + "-" +
                           strategy.replace("=", "").replace(",", "-"))
        subprocess.run(["pcc", model, "-o", out, "--quiet"] + flags, check=True)
        run = subprocess.run(
            mpirun + ["-np", str(ranks), os.path.join(out, "model"), "--check",
                      os.path.join(args.model_dir, "test_data_set_0"),
                      "--threads", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=300)
        lines = run.stdout.strip().splitlines()
        with open(os.path.join(out, "plan.json")) as f:
            plan = json.load(f)
        counts = " ".join(f"{k}={v}" for k, v in plan["collectives"].items()
                          if k != "bytes_per_device")
        print(f"{strategy} ranks={ranks}: {lines[-1] if lines else '(no output)'}"
              f" collectives: {counts} predicted: "
              f"{predicted_counts(model, flags)}", flush=True)
        if run.returncode != 0:
            print(run.stdout, file=sys.stderr)


if __name__ == "__main__":
    main()

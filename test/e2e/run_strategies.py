#!/usr/bin/env python3
"""Compile one exported model for several forced strategies and run each
under mpirun against the model's reference outputs.

Usage: run_strategies.py MODEL_DIR --mpirun "CMD"
                         [--layout searched|megatron|megatron-sp]
                         [--cluster C] STRATEGY...
  [--precision P] [--rtol R] [--atol A]
  STRATEGY is dp=N, tp=N, pp=N, sp=N, mb=N (microbatches),
  spm=ulysses|ring (how sp runs attention), mode=1d|2d|2.5d (the tensor
  scheme) and depth=D (2.5d's depth) joined by commas, as "dp=2,pp=2,tp=2",
  "sp=4,spm=ring" or "tp=8,mode=2.5d,depth=2".

For each strategy prints one line:
  dp=2,tp=4 ranks=8: check: PASS collectives: all_reduce=5 all_gather=0 ...
  predicted: all_reduce=5 all_gather=0 reduce_scatter=0
(the executable's last line, the collective counts per step from plan.json,
and the counts `pcc plan` predicts for the same strategy on the same
cluster), so a lit test can FileCheck numerics, the communication pattern,
and that the planner costs exactly what the compiler emits. Pipelines add
"sends: N predicted: M" (point-to-point sends per step, all stages); any
all-to-alls add "all_to_all: N predicted: M", ring attention
"ring_shift: N predicted: M" (key/value block shifts per step), SUMMA
"broadcast: N predicted: M".
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

KINDS = ("all_reduce", "all_gather", "reduce_scatter")
# Shown only where compiled or predicted: planner kind -> plan.json key.
EXTRA = ("send_recv", "all_to_all", "ring_shift", "broadcast")


def strategy_flags(strategy, layout):
    """pcc's flags for STRATEGY ("dp=2,pp=2,mb=4"; "virtual=2" for
    --pp-virtual 2) and a tensor-axis layout
    (searched, megatron, megatron-sp), and the ranks it runs on."""
    flags = (["--sequence-parallel"] if layout == "megatron-sp"
             else ["--tp-layout", layout])
    ranks = 1
    for part in strategy.split(","):
        key, value = part.split("=")
        if key == "mb":
            flags += ["--microbatches", value]
            continue
        if key in ("spm", "mode", "depth", "virtual"):
            flags += ["--" + {"spm": "sp-mode", "mode": "tp-mode",
                              "depth": "tp-depth",
                              "virtual": "pp-virtual"}[key], value]
            continue
        flags += ["--" + key, value]
        ranks *= int(value)
    # A tensor degree without a mode is 1D (the planner would pick a grid).
    if "--tp" in flags and "--tp-mode" not in flags:
        flags += ["--tp-mode", "1d"]
    return flags, ranks


def predicted_counts(model, flags):
    """Collective counts per step `pcc plan` predicts, and its sends."""
    fixed = [] if "--tp-mode" in flags else ["--tp-mode", "1d"]
    for degree in ("--pp", "--sp", "--tp"):
        if degree not in flags:
            fixed += [degree, "1"]
    plan = subprocess.run(
        ["pcc", "plan", model, "--format", "json"] + fixed + flags,
        stdout=subprocess.PIPE, text=True, check=True)
    counts = dict.fromkeys(KINDS + EXTRA, 0)
    for c in json.loads(plan.stdout)["collectives"]:
        if c["kind"] in counts:
            counts[c["kind"]] += c["count_per_step"]
    extra = {k: counts.pop(k) for k in EXTRA}
    return " ".join(f"{k}={v}" for k, v in counts.items()), extra


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model_dir")
    p.add_argument("--mpirun", required=True)
    p.add_argument("--layout", default="searched")
    # Layouts are chosen by cost, so tests pin the cluster they plan for.
    p.add_argument("--cluster", default="dgx-a100")
    # Stored precision (pcc --precision) and the executable's tolerances.
    p.add_argument("--precision")
    p.add_argument("--rtol")
    p.add_argument("--atol")
    p.add_argument("strategies", nargs="+")
    args = p.parse_args()
    mpirun = shlex.split(args.mpirun)
    model = os.path.join(args.model_dir, "model.onnx")
    for strategy in args.strategies:
        flags, ranks = strategy_flags(strategy, args.layout)
        flags += ["--cluster", args.cluster]
        if args.precision:
            flags += ["--precision", args.precision]
        tolerances = []
        for flag in ("rtol", "atol"):
            if getattr(args, flag):
                tolerances += ["--" + flag, getattr(args, flag)]
        out = os.path.join(args.model_dir, "out-" + args.layout + "-" +
                           (args.precision + "-" if args.precision else "") +
                           strategy.replace("=", "").replace(",", "-"))
        subprocess.run(["pcc", model, "-o", out, "--quiet"] + flags, check=True)
        run = subprocess.run(
            mpirun + ["-np", str(ranks), os.path.join(out, "model"), "--check",
                      os.path.join(args.model_dir, "test_data_set_0"),
                      "--threads", "1"] + tolerances,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=300)
        lines = run.stdout.strip().splitlines()
        with open(os.path.join(out, "plan.json")) as f:
            plan = json.load(f)
        # plan.json counts one run (one microbatch) of every stage.
        runs = plan["mesh"].get("microbatches", 1)
        compiled = plan["collectives"]
        counts = " ".join(f"{k}={compiled[k] * runs}"
                          for k in KINDS + ("all_slice",))
        predicted, extra = predicted_counts(model, flags)
        line = (f"{strategy} ranks={ranks}: "
                f"{lines[-1] if lines else '(no output)'}"
                f" collectives: {counts} predicted: {predicted}")
        if plan["mesh"]["pp"] > 1:
            line += (f" sends: {compiled['send'] * runs}"
                     f" predicted: {extra['send_recv']}")
        for kind in ("all_to_all", "ring_shift", "broadcast"):
            got = compiled.get(kind, 0) * runs
            if got or extra[kind]:
                line += f" {kind}: {got} predicted: {extra[kind]}"
        print(line, flush=True)
        if run.returncode != 0:
            print(run.stdout, file=sys.stderr)


if __name__ == "__main__":
    main()

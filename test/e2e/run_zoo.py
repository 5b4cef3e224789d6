#!/usr/bin/env python3
"""Compiles each model under DIR for 1 rank and for N planned ranks and
checks both against the model's reference outputs.

usage: run_zoo.py DIR --mpirun "CMD" [--devices N] [--cluster C]
                  [--forced STRATEGY]... NAME...
Prints one line per model and run:
  NAME ranks=1: check: PASS
  NAME ranks=4 plan=dp4: check: PASS
  NAME tp=2 ranks=2: check: PASS     (each --forced strategy, as
                                      run_strategies.py spells them)
(the plan as pcc's plan.json names its mesh). The last line of --check's
output is shown, so a failure names the output that differs.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_strategies import strategy_flags  # noqa: E402


def run_one(args, name, devices, forced=None):
    d = os.path.join(args.dir, name)
    out = os.path.join(d, f"out{devices}" + (forced or "").replace("=", ""))
    flags = ["--devices", str(devices), "--cluster", args.cluster]
    if forced:
        extra, devices = strategy_flags(forced, "searched")
        flags = ["--cluster", args.cluster] + extra
    subprocess.run(["pcc", os.path.join(d, "model.onnx"), "-o", out,
                    "--quiet"] + flags, check=True)
    with open(os.path.join(out, "plan.json")) as f:
        mesh = json.load(f)["mesh"]
    plan = "x".join(f"{k}{mesh[k]}" for k in ("dp", "pp", "tp", "sp")
                    if mesh.get(k, 1) > 1) or "single"
    cmd = [os.path.join(out, "model"), "--check",
           os.path.join(d, "test_data_set_0"), "--threads", "1"]
    if devices > 1:
        cmd = shlex.split(args.mpirun) + ["-np", str(devices)] + cmd
    run = subprocess.run(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=300)
    lines = run.stdout.strip().splitlines()
    shown = f" plan={plan}" if devices > 1 and not forced else ""
    print(f"{name}{' ' + forced if forced else ''} ranks={devices}{shown}: "
          f"{lines[-1] if lines else '(no output)'}", flush=True)
    if run.returncode != 0:
        print(run.stdout, file=sys.stderr)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--mpirun", required=True)
    p.add_argument("--devices", type=int, default=4)
    p.add_argument("--cluster", default="dgx-a100")
    p.add_argument("--forced", action="append", default=[])
    p.add_argument("names", nargs="+")
    args = p.parse_args()
    for name in args.names:
        run_one(args, name, 1)
        run_one(args, name, args.devices)
        for strategy in args.forced:
            run_one(args, name, 0, strategy)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Compile one exported model for several forced strategies and run each
under mpirun against the model's reference outputs.

Usage: run_strategies.py MODEL_DIR --mpirun "CMD" STRATEGY...
  STRATEGY is dp=N, tp=N or dpN,tpM as "dp=2,tp=4".

For each strategy prints one line:
  dp=2,tp=4 ranks=8: check: PASS collectives: all_reduce=5 all_gather=0 ...
(the executable's last line, and the collective counts from plan.json), so
a lit test can FileCheck both numerics and the communication pattern.
"""
import json
import os
import shlex
import subprocess
import sys


def main():
    args = sys.argv[1:]
    model_dir = args.pop(0)
    assert args.pop(0) == "--mpirun"
    mpirun = shlex.split(args.pop(0))
    for strategy in args:
        flags, ranks = [], 1
        for part in strategy.split(","):
            key, value = part.split("=")
            flags += ["--" + key, value]
            ranks *= int(value)
        out = os.path.join(model_dir, "out-" + strategy.replace("=", "").replace(",", "-"))
        subprocess.run(["pcc", os.path.join(model_dir, "model.onnx"), "-o", out,
                        "--quiet"] + flags, check=True)
        run = subprocess.run(
            mpirun + ["-np", str(ranks), os.path.join(out, "model"), "--check",
                      os.path.join(model_dir, "test_data_set_0"), "--threads", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=300)
        lines = run.stdout.strip().splitlines()
        with open(os.path.join(out, "plan.json")) as f:
            plan = json.load(f)
        counts = " ".join(f"{k}={v}" for k, v in plan["collectives"].items()
                          if k != "bytes_per_device")
        print(f"{strategy} ranks={ranks}: {lines[-1] if lines else '(no output)'}"
              f" collectives: {counts}", flush=True)
        if run.returncode != 0:
            print(run.stdout, file=sys.stderr)


if __name__ == "__main__":
    main()

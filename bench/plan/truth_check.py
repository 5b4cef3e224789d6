#!/usr/bin/env python3
"""Truth check: the planner's predicted step time on `host` against runs.

Calibrates this machine (`pcc calibrate -o WORK/host.json`), then for each
model (bench_cpu.py's MLP, Transformer encoder layer and GPT decoder, at
sizes where a step takes milliseconds) and each strategy that runs here
(1 rank; data parallel; tensor parallel with the planner's searched layouts
and with Megatron's; both; pipelines; Megatron's and Ulysses / ring
sequence parallelism; 2D, 2.5D and 3D tensor parallelism), it

  - asks `pcc plan --cluster WORK/host.json` with the strategy forced for
    its predicted step time (JSON predicted.step_time_s),
  - compiles the same strategy on the same cluster spec (so the compiled
    layouts are the ones predicted) and checks the output against PyTorch,
  - runs it under mpirun with one BLAS thread per rank, `--bench ITERS`,
    REPEATS times, and takes the median of the per-run medians.

Reports Spearman's rank correlation between predicted and measured step
times per model (over all its strategies, and over those whose ranks fit the
cores), over all (model, strategy) pairs, and measured / predicted per run. Ranks beyond the cores share them
(mpirun --oversubscribe); the cost model shares the cores the same way.

usage: truth_check.py PCC WORK [--models mlp encoder gpt] [--iters 10]
                      [--repeats 3] [--json FILE]
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "test", "e2e"))
from bench_cpu import MODELS, export, write_set  # noqa: E402
from run_strategies import strategy_flags as forced_flags  # noqa: E402

import torch  # noqa: E402

# (label, strategy as test/e2e/run_strategies.py spells it, tp layout):
# layout "megatron-sp" is Megatron with its sequence parallelism. Sequence
# parallelism over sp runs on models with attention only.
STRATEGIES = [
    ("1", "dp=1", "searched"),
    ("dp2", "dp=2", "searched"),
    ("tp2", "tp=2", "searched"),
    ("tp2-megatron", "tp=2", "megatron"),
    ("tp2-megatron-sp", "tp=2", "megatron-sp"),
    ("pp2", "pp=2", "searched"),
    ("dp4", "dp=4", "searched"),
    ("tp4", "tp=4", "searched"),
    ("tp4-megatron", "tp=4", "megatron"),
    ("dp2,tp2", "dp=2,tp=2", "searched"),
    ("dp2,tp2-megatron", "dp=2,tp=2", "megatron"),
    ("pp2,tp2", "pp=2,tp=2", "searched"),
    ("dp2,pp2", "dp=2,pp=2", "searched"),
    ("sp2-ulysses", "sp=2,spm=ulysses", "megatron"),
    ("sp2-ring", "sp=2,spm=ring", "megatron"),
    ("tp4-2d", "tp=4,mode=2d", "searched"),
    ("tp8-2.5d", "tp=8,mode=2.5d,depth=2", "searched"),
    ("tp8-3d", "tp=8,mode=3d", "searched"),
]

MPIRUN = "mpirun --oversubscribe -q --allow-run-as-root"


def ranks(values):
    """Average ranks (1-based), ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else float("nan")


def predict(pcc, model, flags, ranks):
    fixed = [] if "--tp-mode" in flags else ["--tp-mode", "1d"]
    for degree in ("--pp", "--sp"):
        if degree not in flags:
            fixed += [degree, "1"]
    out = subprocess.run(
        [pcc, "plan", model, "--format", "json", "--devices", str(ranks)] +
        fixed + flags, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["predicted"]["step_time_s"] * 1e3


def measure(exe, data, n, iters, repeats, env):
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            shlex.split(MPIRUN) + ["-np", str(n), exe, "--inputs", data,
                                   "--bench", str(iters), "--threads", "1"],
            capture_output=True, text=True, check=True, env=env,
            timeout=600).stdout
        runs.append(json.loads(out.strip().splitlines()[-1])["median_ms"])
    return statistics.median(runs), runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pcc")
    ap.add_argument("work")
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    pcc = os.path.abspath(args.pcc)
    os.makedirs(args.work, exist_ok=True)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")

    cluster = os.path.abspath(os.path.join(args.work, "host.json"))
    subprocess.run([pcc, "calibrate", "-o", cluster], check=True,
                   stdout=subprocess.DEVNULL)
    with open(cluster) as f:
        spec = json.load(f)
    print(f"host: {spec['devices_per_node']} cores, "
          f"{spec['peak_tflops']['fp32'] * 1e3:.1f} GFLOP/s, "
          f"{spec['memory_bandwidth_gb_s']:.1f} GB/s, MPI "
          f"{spec['intra_node']['latency_us']:.2f} us / "
          f"{spec['intra_node']['bandwidth_gb_s']:.2f} GB/s", flush=True)

    results = []
    for name in args.models:
        torch.manual_seed(0)
        model, x = MODELS[name]()
        model.eval()
        d = os.path.join(args.work, name)
        os.makedirs(d, exist_ok=True)
        onnx_path = os.path.join(d, "model.onnx")
        export(model, x, onnx_path)
        with torch.no_grad():
            write_set(os.path.join(d, "data"), x.numpy(), model(x).numpy())
        for label, strategy, layout in STRATEGIES:
            if "sp=" in strategy and name == "mlp":
                continue
            flags, n = forced_flags(strategy, layout)
            flags += ["--cluster", cluster]
            out = os.path.join(d, "out-" + label.replace(",", "-"))
            subprocess.run([pcc, onnx_path, "-o", out, "--quiet"] + flags,
                           check=True)
            exe = os.path.join(out, "model")
            check = subprocess.run(
                shlex.split(MPIRUN) + ["-np", str(n), exe, "--check",
                                       os.path.join(d, "data"), "--threads", "1"],
                capture_output=True, text=True, env=env, timeout=600)
            if check.returncode != 0:
                sys.exit(f"{name} {label}: output does not match PyTorch:\n"
                         f"{check.stdout}{check.stderr}")
            predicted = predict(pcc, onnx_path, flags, n)
            measured, runs = measure(exe, os.path.join(d, "data"), n,
                                     args.iters, args.repeats, env)
            r = {"model": name, "strategy": label, "ranks": n,
                 "predicted_ms": round(predicted, 3),
                 "measured_ms": round(measured, 3),
                 "measured_runs_ms": [round(v, 3) for v in runs],
                 "measured_over_predicted": round(measured / predicted, 3)}
            results.append(r)
            print(f"{name:8} {label:18} ranks {n}  predicted "
                  f"{predicted:9.3f} ms  measured {measured:9.3f} ms  "
                  f"ratio {measured / predicted:5.2f}", flush=True)

    # Per model over its strategies (the planner's real question), then
    # over the strategies whose ranks fit the cores (no time-slicing), then
    # over every (model, strategy) pair.
    cores = spec["devices_per_node"]
    summary = {}
    print()
    for name in args.models:
        rows = [r for r in results if r["model"] == name]
        fit = [r for r in rows if r["ranks"] <= cores]
        rho = spearman([r["predicted_ms"] for r in rows],
                       [r["measured_ms"] for r in rows])
        rho_fit = spearman([r["predicted_ms"] for r in fit],
                           [r["measured_ms"] for r in fit])
        summary[name] = {"all": round(rho, 3), "unshared": round(rho_fit, 3)}
        print(f"{name:8} Spearman over its {len(rows)} strategies: {rho:.3f}; "
              f"over the {len(fit)} with ranks <= {cores} cores: {rho_fit:.3f}")
    rho = spearman([r["predicted_ms"] for r in results],
                   [r["measured_ms"] for r in results])
    summary["pairs"] = round(rho, 3)
    ratios = [r["measured_over_predicted"] for r in results]
    print(f"all      Spearman over {len(results)} (model, strategy) pairs: "
          f"{rho:.3f}; measured / predicted {min(ratios):.2f} .. "
          f"{max(ratios):.2f} (median {statistics.median(ratios):.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"host": spec, "results": results,
                       "spearman": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

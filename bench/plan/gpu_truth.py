#!/usr/bin/env python3
"""The planner's single-GPU predictions against measured CUDA executables.

`pcc calibrate --target cuda` measures one GPU into a cluster spec (through
pcc-gpu-probe); bench/bench_cuda.py measures pcc's executables of the same
models on the same GPU. This script plans each measured case with that spec
(`pcc plan --devices 1 --target cuda --precision P`) and prints predicted
against measured step time, their ratio, and Spearman's rank correlation
over the cases (the planner must order precisions and models as the GPU
does).

  /usr/bin/python3 bench/plan/gpu_truth.py --pcc build/bin/pcc \\
      --cluster gpu.json --bench bench.json [--json out.json]

The models are exported again here from bench_cuda.py's definitions (the
weights do not matter to the planner).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import bench_cuda  # noqa: E402


def predict(pcc, model, cluster, precision):
    flags = ["--precision", precision] if precision else []
    out = subprocess.run(
        [pcc, "plan", model, "--devices", "1", "--target", "cuda",
         "--cluster", cluster, "--format", "json"] + flags,
        capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"pcc plan {model} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)["predicted"]["step_time_s"] * 1e3


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    for rank, i in enumerate(order):
        r[i] = float(rank)
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pcc", default=os.path.join(HERE, "../../build/bin/pcc"))
    ap.add_argument("--cluster", required=True,
                    help="the spec `pcc calibrate --target cuda` wrote")
    ap.add_argument("--bench", required=True,
                    help="bench_cuda.py run's --json rows, on the same GPU")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--models", help="keep the exported models here (and "
                    "reuse them)")
    args = ap.parse_args()
    rows = [r for r in json.load(open(args.bench)) if r["pcc_ms"] == r["pcc_ms"]]
    results = []
    print("| case | measured ms | predicted ms | predicted / measured |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        where = args.models or tmp
        os.makedirs(where, exist_ok=True)
        exported = {}
        for r in rows:
            name, precision = r["case"].rsplit("-", 1)
            # "bf16model": the bfloat16 module's export, in its own precision.
            own = precision == "bf16model"
            key = name + ("-bf16" if own else "")
            if key not in exported:
                exported[key] = os.path.join(where, key + ".onnx")
                if not os.path.exists(exported[key]):
                    bench_cuda.export(name, exported[key], bf16=own)
            p = predict(args.pcc, exported[key], args.cluster,
                        None if own else precision)
            results.append({"case": r["case"], "measured_ms": r["pcc_ms"],
                            "predicted_ms": p,
                            "ratio": p / r["pcc_ms"]})
            print(f"| {r['case']} | {r['pcc_ms']:.3f} | {p:.3f} "
                  f"| {p / r['pcc_ms']:.2f} |", flush=True)
    within = sum(1 for r in results if abs(r["ratio"] - 1) <= 0.15)
    rho = spearman([r["measured_ms"] for r in results],
                   [r["predicted_ms"] for r in results])
    print(f"\nwithin 15%: {within} of {len(results)}; Spearman rank "
          f"correlation {rho:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Single-device CPU speed: pcc executables against PyTorch eager.

For each model (an MLP, nn.TransformerEncoderLayer, a GPT-2-style decoder)
this exports ONNX, compiles it with pcc, checks the executable against
PyTorch's output, then times both on the same input with the same thread
count: pcc via `model --bench N`, PyTorch via torch.inference_mode() calls.
Each side is measured REPEATS times, alternating, and the median of medians
is reported. Both sides run in their own process with OPENBLAS_NUM_THREADS
and OMP_NUM_THREADS set to the thread count (PyTorch's set_num_threads does
not bound the BLAS it calls). A one-op MatMul model compiled by pcc measures the BLAS's own
GEMM throughput, to which the models' GEMM FLOP rates are compared.

usage: bench_cpu.py PCC WORK_DIR [--threads 1 2] [--iters 20] [--repeats 5]
"""
import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper, shape_inference

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "models"))
from export_models import GPT  # noqa: E402


def mlp():
    return nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024),
                         nn.ReLU(), nn.Linear(1024, 1024)), torch.randn(64, 1024)


def encoder():
    m = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                   dropout=0.0, batch_first=True)
    return m, torch.randn(4, 128, 512)


def gpt():
    m = GPT(vocab=4096, max_len=128, d_model=512, n_head=8, n_layer=4)
    return m, torch.randint(0, 4096, (4, 128))


def matmul_peak():
    class MM(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(1024, 1024))

        def forward(self, x):
            return x @ self.w
    return MM(), torch.randn(1024, 1024)


MODELS = {"mlp": mlp, "encoder": encoder, "gpt": gpt}


def export(model, x, path):
    buf = io.BytesIO()
    # Grad mode on during export keeps TransformerEncoderLayer off its fused
    # (unexportable) inference path; timing below uses inference_mode.
    torch.onnx.export(model, (x,), buf, opset_version=14, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    m = onnx.load_from_string(buf.getvalue())
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return m


def gemm_flops(model):
    m = shape_inference.infer_shapes(model)
    shapes = {}
    for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    flops = 0
    for n in m.graph.node:
        if n.op_type not in ("MatMul", "Gemm"):
            continue
        out = shapes.get(n.output[0])
        a = shapes.get(n.input[0])
        if not out or not a:
            continue
        k = a[-1] if not (n.op_type == "Gemm" and any(
            at.name == "transA" and at.i for at in n.attribute)) else a[0]
        flops += 2 * int(np.prod(out)) * k
    return flops


def write_set(folder, x, y):
    os.makedirs(folder, exist_ok=True)
    for name, arr in (("input_0.pb", x), ("output_0.pb", y)):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(numpy_helper.from_array(np.ascontiguousarray(arr)).SerializeToString())


def thread_env(threads):
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    env["MKL_NUM_THREADS"] = str(threads)
    return env


def pcc_median(exe, data, threads, iters):
    out = subprocess.run([exe, "--inputs", data, "--bench", str(iters),
                          "--threads", str(threads)], env=thread_env(threads),
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def torch_median(name, threads, iters):
    """Times PyTorch eager in a fresh process with the thread env set."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__),
                          "--torch-worker", name, str(threads), str(iters)],
                         env=thread_env(threads), capture_output=True,
                         text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


def eager_median(model, x, iters, warmup=3):
    """Median milliseconds of `model(x)` in inference mode, after warm-up."""
    with torch.inference_mode():
        for _ in range(warmup):
            model(x)
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def torch_worker(name, threads, iters):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model, x = MODELS[name]()
    model.eval()
    print(eager_median(model, x, iters))


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--torch-worker":
        torch_worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("pcc")
    ap.add_argument("work")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.manual_seed(0)
    results = []

    def prepare(name, factory):
        torch.manual_seed(0)
        model, x = factory()
        model.eval()
        d = os.path.join(args.work, name)
        os.makedirs(d, exist_ok=True)
        onnx_model = export(model, x, os.path.join(d, "model.onnx"))
        with torch.no_grad():
            y = model(x)
        write_set(os.path.join(d, "data"), x.numpy(), y.numpy())
        subprocess.run([args.pcc, os.path.join(d, "model.onnx"), "-o",
                        os.path.join(d, "out"), "--quiet"], check=True)
        check = subprocess.run([os.path.join(d, "out", "model"), "--check",
                                os.path.join(d, "data")], capture_output=True,
                               text=True)
        if check.returncode != 0:
            sys.exit(f"{name}: pcc output does not match PyTorch:\n{check.stdout}")
        return model, x, d, gemm_flops(onnx_model)

    _, _, peak_dir, peak_flops = prepare("matmul_1024", matmul_peak)
    for name in args.models:
        model, x, d, flops = prepare(name, MODELS[name])
        for t in args.threads:
            peak_ms = statistics.median(
                pcc_median(os.path.join(peak_dir, "out", "model"),
                           os.path.join(peak_dir, "data"), t, args.iters)
                for _ in range(3))
            pcc_runs, torch_runs = [], []
            for _ in range(args.repeats):
                pcc_runs.append(pcc_median(os.path.join(d, "out", "model"),
                                           os.path.join(d, "data"), t, args.iters))
                torch_runs.append(torch_median(name, t, args.iters))
            p, q = statistics.median(pcc_runs), statistics.median(torch_runs)
            peak_gflops = peak_flops / peak_ms / 1e6
            r = {"model": name, "threads": t, "pcc_ms": round(p, 3),
                 "torch_ms": round(q, 3), "speedup_vs_torch": round(q / p, 3),
                 "gemm_gflops": round(flops / p / 1e6, 2),
                 "blas_peak_gflops": round(peak_gflops, 2),
                 "fraction_of_blas_peak": round(flops / p / 1e6 / peak_gflops, 3)}
            results.append(r)
            print(json.dumps(r), flush=True)

    print("\n| model | threads | pcc ms | PyTorch ms | PyTorch/pcc | GEMM GFLOP/s | BLAS peak GFLOP/s | of peak |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['model']} | {r['threads']} | {r['pcc_ms']} | {r['torch_ms']} | "
              f"{r['speedup_vs_torch']} | {r['gemm_gflops']} | {r['blas_peak_gflops']} | "
              f"{r['fraction_of_blas_peak']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""pcc's planner against Megatron-Core's published H100 MFU (issue 16 item 7).

NVIDIA's Megatron-LM README strong-scales "the standard GPT-3 model (our
version has slightly more than 175 billion parameters due to larger
vocabulary size)" from 96 to 4608 H100 GPUs at a global batch of 1152
sequences of 4096 tokens, vocabulary 131072, and reports MFU falling from
47% to 42%. Those two endpoints are the only per-configuration figures the
README gives as text (its weak-scaling rows, 2B to 462B, are an image), and
it does not give their TP/PP/DP: pcc's own plan for the same model, batch
and GPU count is compared, with Megatron-Core's pipeline schedules (1F1B,
interleaved searched; `--pp-schedule 1f1b`), in bf16 on the `dgx-h100` spec.
MFU is Megatron's: 72 B s L h^2 (1 + s/6h + V/12Lh) model FLOPs a step (no
recompute counted) over the step time and 989 TFLOP/s per GPU.

  /usr/bin/python3 bench/plan/megatron_core_h100.py --pcc build/bin/pcc [--json out.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_gpt  # noqa: E402

GPT3 = {"hidden": 12288, "layers": 96, "heads": 96, "seq": 4096,
        "vocab": 131072, "batch": 1152, "name": "gpt3-175b"}
# (GPUs, published MFU): the README's strong-scaling endpoints.
POINTS = [(96, 0.47), (4608, 0.42)]
PEAK = 989e12


def model_flops(c):
    b, s, l, h, v = c["batch"], c["seq"], c["layers"], c["hidden"], c["vocab"]
    return 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pcc", default=os.path.join(HERE, "../../build/bin/pcc"))
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    results = []
    print("| GPUs | pcc plan | predicted step | predicted MFU | published MFU "
          "| ratio | plan time |")
    print("|" + "---|" * 7)
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "gpt3.onnx")
        make_gpt.write(GPT3, "float16", model, quiet=True)
        for gpus, published in POINTS:
            cmd = [args.pcc, "plan", model, "--devices", str(gpus),
                   "--cluster", "dgx-h100", "--target", "cuda", "--train",
                   "--freeze", "attn_mask", "--precision", "bf16",
                   "--pp-schedule", "1f1b", "--format", "json"]
            start = time.monotonic()
            out = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.monotonic() - start
            if out.returncode != 0:
                raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
            plan = json.loads(out.stdout)
            step = plan["predicted"]["step_time_s"]
            mfu = model_flops(GPT3) / gpus / step / PEAK
            results.append({"gpus": gpus, "label": plan["label"],
                            "step_time_s": step, "mfu": mfu,
                            "published_mfu": published,
                            "ratio": mfu / published, "plan_seconds": wall})
            print(f"| {gpus} | {plan['label']} | {step:.3f} s | {mfu:.1%} "
                  f"| {published:.0%} | {mfu / published:.2f} | {wall:.2f} s |",
                  flush=True)
    within = sum(1 for r in results if abs(r["ratio"] - 1) <= 0.15)
    print(f"\npredicted MFU within +-15% of the published on {within}/"
          f"{len(results)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0 if within == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())

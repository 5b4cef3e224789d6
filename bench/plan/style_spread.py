#!/usr/bin/env python3
"""One GPT written the ways torch users write it, planned alike (issue 16 item 2).

Exports the same decoder (tied embeddings, fp16, dropout) in torch_gpt.py's
three styles (Hugging Face GPT-2, nanoGPT, Megatron) shape-only, plans each
for GPU ranks (`--target cuda`: the kernels pcc's CUDA back end emits) and
prints, per plan, the predicted step of each style and the spread (largest
over smallest). Plans: pcc's own and each forced configuration given with
--force NAME=FLAGS (default: Megatron's 1D layouts with full recompute at
tp 4 and pp 2, and the same layouts with ZeRO-1 and selective recompute).
Exits 1 when a spread exceeds --tolerance.

  /usr/bin/python3 bench/plan/style_spread.py --pcc build/bin/pcc
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from megatron_table1 import torch_export  # noqa: E402

STYLES = ["hf", "nanogpt", "megatron"]
FORCED = [
    "megatron=--tp 4 --pp 2 --tp-mode 1d --tp-layout megatron --sp 1 "
    "--recompute full --zero 0 --pp-schedule 1f1b",
    "megatron zero1=--tp 4 --pp 2 --tp-mode 1d --tp-layout megatron --sp 1 "
    "--recompute selective --zero 1",
]


def plan(args, model, flags):
    cmd = [args.pcc, "plan", model, "--devices", str(args.devices),
           "--cluster", args.cluster, "--target", "cuda", "--train",
           "--format", "json", "--progress", "never"] + flags
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pcc", default=os.path.join(HERE, "../../build/bin/pcc"))
    ap.add_argument("--devices", type=int, default=64)
    ap.add_argument("--cluster", default="dgx-a100")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--vocab", type=int, default=51200)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--force", action="append", metavar="NAME=FLAGS",
                    help="a forced plan to compare (repeatable; replaces the "
                    "defaults)")
    ap.add_argument("--forced-only", action="store_true",
                    help="leave pcc's own plan out")
    ap.add_argument("--tolerance", type=float, default=0.03,
                    help="largest allowed spread (0.03: within 3%%)")
    args = ap.parse_args()
    plans = ([] if args.forced_only else [("searched", [])]) + [
        (f.split("=", 1)[0], f.split("=", 1)[1].split())
        for f in (args.force or FORCED)]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        cfg = {k: getattr(args, k) for k in
               ("layers", "hidden", "heads", "vocab", "seq", "batch",
                "dropout")}
        models = {}
        for style in STYLES:
            models[style] = os.path.join(tmp, f"{style}.onnx")
            torch_export(style, cfg, models[style], ["--tied"])
        print("| plan | " + " | ".join(STYLES) + " | spread |")
        print("|---" * (len(STYLES) + 2) + "|")
        for name, flags in plans:
            steps, labels = [], []
            for style in STYLES:
                p = plan(args, models[style], flags)
                steps.append(p["predicted"]["step_time_s"])
                labels.append(p["label"])
            spread = max(steps) / min(steps) - 1
            ok &= spread <= args.tolerance
            cells = " | ".join(f"{s * 1e3:.1f} ms ({l})"
                               for s, l in zip(steps, labels))
            print(f"| {name} | {cells} | {spread:.2%} |")
    print(f"every spread within {args.tolerance:.0%}" if ok else
          f"a spread exceeds {args.tolerance:.0%}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

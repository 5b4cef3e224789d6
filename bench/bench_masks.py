#!/usr/bin/env python3
"""CPU inference of one GPT exported with each causal-mask style.

bench/plan/torch_gpt.py writes the same decoder as Hugging Face
(`where` on a bool buffer), nanoGPT (masked_fill(-inf)) and Megatron-LM
(a -10000 triangle added to the scores) write it. pcc's attention kernel
skips the key tiles past the diagonal under each (under the additive mask
where it bounds the scores far under the row's maximum). This compiles
each export, checks it against PyTorch's logits, then times the pcc
executable (`--bench`) and PyTorch eager on the same tokens, alternating,
in processes limited to the same thread count; medians of medians.

usage: bench_masks.py PCC WORK_DIR [--seq 1024] [--threads 1] [--repeats 3]
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "plan"))
sys.path.insert(0, os.path.join(HERE, "..", "test", "models"))
sys.path.insert(0, HERE)
import torch_gpt  # noqa: E402
from bench_cpu import eager_median, pcc_median, thread_env  # noqa: E402

STYLES = ("megatron", "nanogpt", "hf")


def shape(style, seq, out):
    return ["--style", style, "--tied", "--layers", "2", "--hidden", "256",
            "--heads", "4", "--vocab", "1000", "--seq", str(seq), "--batch",
            "2", "-o", out]


def torch_median(style, seq, threads, iters):
    out = subprocess.run([sys.executable, __file__, "--worker", style,
                          "--seq", str(seq), "--threads", str(threads),
                          "--iters", str(iters), "unused", "unused"],
                         env=thread_env(threads), check=True, capture_output=True,
                         text=True).stdout
    return float(out.strip().splitlines()[-1])


def worker(style, seq, threads, iters):
    import torch
    torch.set_num_threads(threads)
    cfg = torch_gpt.config(shape(style, seq, os.devnull))
    torch.manual_seed(0)
    model = torch_gpt.GPT(cfg).eval()
    tokens = torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq))
    print(eager_median(model, tokens, iters, warmup=2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pcc")
    ap.add_argument("work")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--worker")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.seq, args.threads, args.iters)
        return
    print(f"| style | pcc ms | PyTorch ms | PyTorch / pcc |  (seq {args.seq}, "
          f"{args.threads} thread(s), medians of {args.repeats})")
    for style in STYLES:
        d = os.path.join(args.work, style)
        data = os.path.join(d, "test_data_set_0")
        torch_gpt.export(torch_gpt.config(
            shape(style, args.seq, os.path.join(d, "model.onnx")) +
            ["--data", data]))
        subprocess.run([args.pcc, os.path.join(d, "model.onnx"), "-o",
                        os.path.join(d, "out"), "--quiet"], check=True)
        exe = os.path.join(d, "out", "model")
        subprocess.run([exe, "--check", data], check=True,
                       capture_output=True)
        ours, theirs = [], []
        for _ in range(args.repeats):
            ours.append(pcc_median(exe, data, args.threads, args.iters))
            theirs.append(torch_median(style, args.seq, args.threads,
                                       args.iters))
        p, t = statistics.median(ours), statistics.median(theirs)
        print(f"| {style} | {p:.1f} | {t:.1f} | {t / p:.2f} |")


if __name__ == "__main__":
    main()

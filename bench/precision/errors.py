#!/usr/bin/env python3
"""Mixed-precision error of pcc's CPU target against PyTorch's own.

Usage: errors.py OUTDIR [--models mlp encoder gpt bert vit cnn]

For every model: the maximum absolute error against PyTorch's float32
outputs of pcc --precision bf16 and fp16 (16-bit storage, f32 arithmetic),
of PyTorch running the same model in bfloat16 (model.to(torch.bfloat16),
CPU eager; torch 1.13 has no CPU float16 matmul), and the largest |output|.
Prints a Markdown table. Needs pcc on PATH and Debian's python3-torch.
"""
import argparse
import os
import re
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "models"))
import export_models as em  # noqa: E402


def torch_bf16_error(name):
    factory, _, spec, _, _ = em.MODELS[name]
    torch.manual_seed(0)
    made = factory()
    model = (made[0] if isinstance(made, tuple) else made).eval()
    em.perturb_trivial_params(model)
    x = em.make_input(spec)
    ref = model(*x).detach()
    xb = tuple(t.to(torch.bfloat16) if t.is_floating_point() else t for t in x)
    out = model.to(torch.bfloat16)(*xb).detach().float()
    return (out - ref).abs().max().item(), ref.abs().max().item()


def pcc_error(outdir, name, precision):
    model = os.path.join(outdir, name)
    exe = os.path.join(model, "out-" + precision)
    subprocess.run(["pcc", os.path.join(model, "model.onnx"), "-o", exe,
                    "--quiet", "--precision", precision], check=True)
    r = subprocess.run([os.path.join(exe, "model"), "--check",
                        os.path.join(model, "test_data_set_0"), "--rtol", "0",
                        "--atol", "1e30"], stdout=subprocess.PIPE, text=True,
                       check=True)
    return float(re.search(r"max_abs_err=(\S+)", r.stdout).group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("outdir")
    p.add_argument("--models", nargs="+",
                   default=["mlp", "encoder", "gpt", "bert", "vit", "cnn"])
    a = p.parse_args()
    subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "test",
                                                 "models", "export_models.py"),
                    a.outdir, "--only"] + a.models, check=True,
                   stdout=subprocess.DEVNULL)
    print("| model | max abs output | pcc bf16 | PyTorch bf16 | pcc fp16 |")
    print("|---|---|---|---|---|")
    for name in a.models:
        t_err, scale = torch_bf16_error(name)
        print(f"| {name} | {scale:.3g} | {pcc_error(a.outdir, name, 'bf16'):.3g}"
              f" | {t_err:.3g} | {pcc_error(a.outdir, name, 'fp16'):.3g} |",
              flush=True)


if __name__ == "__main__":
    main()

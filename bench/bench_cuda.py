#!/usr/bin/env python3
"""Single-GPU speed and numerics: pcc's CUDA executables against PyTorch.

Two halves, because pcc runs where there is no GPU and the GPU machine has no
pcc:

  bench_cuda.py build PCC OUT   exports the models below (torch 1.13 here),
                                compiles each with `pcc --target cuda` in
                                fp32, tf32 and bf16 (GPT's also exported as
                                a bfloat16 module), and packs OUT for
                                travel
  bench_cuda.py run OUT [--iters N] [--repeats R]
                                on the GPU machine (python3 with torch):
                                runs each executable with --outputs and
                                --bench N, the same nn.Module in PyTorch eager
                                (CUDA events, same precision: fp32 without
                                TF32, fp32 with TF32 GEMMs, or the module
                                cast to bfloat16), checks
                                pcc's output against PyTorch's fp32 output and
                                prints one table row per case; R alternating
                                repeats, median of the medians

Weights are a seeded 1021-value tile per parameter (numpy's RandomState, the
same on both machines), so weights.bin compresses (xz) to almost nothing for the
trip and both sides compute with identical weights. Inputs are made on the
GPU machine from the manifest.
"""
import argparse
import io
import json
import lzma
import os
import shutil
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "models"))

TILE = 1021


def models():
    """name -> (constructor, inputs as (name, shape, dtype, vocab))."""
    import torch.nn as nn
    from export_models import GPT

    def gpt():
        return GPT(vocab=8192, max_len=512, d_model=1024, n_head=16, n_layer=4)

    def gpt2():
        # GPT-2 small's shape (vocabulary padded to 50304, as nanoGPT does).
        return GPT(vocab=50304, max_len=1024, d_model=768, n_head=12,
                   n_layer=12)

    def encoder():
        return nn.TransformerEncoderLayer(d_model=1024, nhead=16,
                                          dim_feedforward=4096, dropout=0.0,
                                          batch_first=True)

    def mlp():
        return nn.Sequential(nn.Linear(4096, 16384), nn.GELU(),
                             nn.Linear(16384, 4096))

    return {
        "gpt": (gpt, [("tokens", (8, 512), "int64", 8192)]),
        "gpt2": (gpt2, [("tokens", (8, 1024), "int64", 50304)]),
        "encoder": (encoder, [("input", (8, 512, 1024), "float32", 0)]),
        "mlp": (mlp, [("input", (2048, 4096), "float32", 0)]),
    }


def fill_params(model):
    """Every parameter a tile of seeded normals (norm scales around 1)."""
    import torch
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            tile = np.random.RandomState(1000 + i).standard_normal(TILE)
            if p.dim() >= 2:
                values = tile * (1.0 if "tok" in name or "pos" in name
                                 else 1.0 / np.sqrt(p.shape[-1]))
            else:
                values = tile * 0.1 + (1.0 if name.endswith("weight") else 0)
            data = np.resize(values.astype(np.float32), p.numel())
            p.copy_(torch.from_numpy(data.reshape(tuple(p.shape))))
    return model.eval()


def make_inputs(spec):
    rs = np.random.RandomState(0)
    out = []
    for name, shape, dtype, vocab in spec:
        if dtype == "int64":
            out.append(rs.randint(0, vocab, size=shape).astype(np.int64))
        else:
            out.append(rs.standard_normal(shape).astype(np.float32))
    return out


# Models also exported as torch's bfloat16 module (`.to(torch.bfloat16)`),
# compiled in the model's own precision: the program then takes and returns
# bf16 tensors, as the PyTorch peer does (the float32 export compiled with
# --precision bf16 keeps float32 inputs and outputs: GPT-2's f32 logits are
# 1.6 GB a step).
BF16_EXPORTS = ("gpt", "gpt2")


def export(name, path, bf16=False):
    """Writes model `name` (seeded weights) as ONNX to `path`."""
    import torch
    make, spec = models()[name]
    model = fill_params(make())
    x = tuple(torch.from_numpy(a) for a in make_inputs(spec))
    if bf16:
        model = model.to(torch.bfloat16)
        x = tuple(t.to(torch.bfloat16) if t.is_floating_point() else t
                  for t in x)
    buf = io.BytesIO()
    # bfloat16 Pow (the decomposed LayerNorm) needs a newer opset than 14.
    torch.onnx.export(model, x, buf, opset_version=17 if bf16 else 14,
                      input_names=[s[0] for s in spec],
                      output_names=["output"], do_constant_folding=True)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def build(pcc, out, only=None):
    os.makedirs(out, exist_ok=True)
    manifest = []

    def compile_case(onnx_path, name, case, precision, flags):
        d = os.path.join(out, case)
        subprocess.run([pcc, onnx_path, "--target", "cuda", "--quiet", "-o",
                        d] + flags, check=True)
        w = os.path.join(d, "weights.bin")
        with open(w, "rb") as src, lzma.open(w + ".xz", "wb",
                                             preset=1) as dst:
            shutil.copyfileobj(src, dst, 1 << 24)
        os.remove(w)
        manifest.append({"case": case, "model": name,
                         "precision": precision, "inputs": models()[name][1]})

    for name in models():
        if only and name not in only:
            continue
        onnx_path = os.path.join(out, name + ".onnx")
        export(name, onnx_path)
        for precision in ("fp32", "tf32", "bf16"):
            compile_case(onnx_path, name, f"{name}-{precision}", precision,
                         ["--precision", precision])
        os.remove(onnx_path)
        if name in BF16_EXPORTS:
            export(name, onnx_path, bf16=True)
            compile_case(onnx_path, name, f"{name}-bf16model", "bf16", [])
            os.remove(onnx_path)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"built {len(manifest)} cases in {out}")


def torch_time(model, x, iters):
    import torch
    ms = []
    with torch.inference_mode():
        for _ in range(3):
            model(*x)
        torch.cuda.synchronize()
        for _ in range(iters):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            model(*x)
            b.record()
            torch.cuda.synchronize()
            ms.append(a.elapsed_time(b))
    return statistics.median(ms)


def fused_attention(model):
    """The model with torch's fused attention (scaled_dot_product_attention,
    causal) in place of the exported one, or None where torch lacks it or
    the model has no CausalSelfAttention: PyTorch's best eager peer."""
    import torch.nn.functional as F
    from export_models import CausalSelfAttention
    if not hasattr(F, "scaled_dot_product_attention"):
        return None
    layers = [m for m in model.modules() if isinstance(m, CausalSelfAttention)]
    if not layers:
        return None

    def forward(self, x):
        B, T, C = x.shape
        H = self.n_head
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))

    for m in layers:
        m.forward = forward.__get__(m)
    return model


def pcc_time(exe, data, iters):
    r = subprocess.run([exe, "--inputs", data, "--bench", str(iters)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode:
        raise RuntimeError(r.stdout.strip().splitlines()[-1])
    return json.loads(r.stdout.strip().splitlines()[-1])["median_ms"]


def tensor_float32(t):
    """A TensorProto's values as float32 (bfloat16 by hand: older onnx
    returns its raw 16-bit patterns)."""
    from onnx import TensorProto, numpy_helper
    if t.data_type == TensorProto.BFLOAT16:
        raw = (np.frombuffer(t.raw_data, dtype=np.uint16) if t.raw_data
               else np.array(t.int32_data, dtype=np.uint16))
        bits = raw.astype(np.uint32) << 16
        return bits.view(np.float32).reshape(tuple(t.dims))
    return numpy_helper.to_array(t).astype(np.float32)


def compiled_time(model, x, iters):
    """Median ms of `model`, a torch.compile wrapper (inductor; it compiles
    in the first warm-up call), or None where it cannot compile here: a
    peer, not a requirement."""
    try:
        return torch_time(model, x, iters)
    except Exception as e:  # noqa: BLE001 - any failure means no peer
        print(f"torch.compile unavailable: {str(e).splitlines()[0]}",
              file=sys.stderr)
        return None


def run(out, iters, repeats, only=None, compile_peer=False):
    import torch
    from onnx import numpy_helper
    made = models()
    torch.use_deterministic_algorithms(False)  # export_models turns it on
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    rows = []
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| case | pcc ms | torch ms | torch/pcc | torch sdpa ms | sdpa/pcc "
          + ("| torch.compile ms | compile/pcc " if compile_peer else "")
          + "| max rel err vs torch fp32 |")
    print("|---" * (9 if compile_peer else 7) + "|")
    for c in manifest:
        if only and c["case"] not in only:
            continue
        d = os.path.join(out, c["case"])
        w = os.path.join(d, "weights.bin")
        if not os.path.exists(w):
            with lzma.open(w + ".xz", "rb") as src, open(w, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 24)
        spec = [tuple(s) for s in c["inputs"]]
        arrays = make_inputs(spec)
        data = os.path.join(d, "inputs")
        os.makedirs(data, exist_ok=True)
        for k, (a, s) in enumerate(zip(arrays, spec)):
            with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, s[0]).SerializeToString())
        exe = os.path.join(d, "model")
        got_dir = os.path.join(d, "outputs")
        r = subprocess.run([exe, "--inputs", data, "--outputs", got_dir],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        model = fill_params(made[c["model"]][0]()).cuda()
        x = [torch.from_numpy(a).cuda() for a in arrays]
        with torch.inference_mode():
            ref = model(*x).float().cpu().numpy()
        if r.returncode:
            err = "FAILED: " + r.stdout.strip().splitlines()[-1]
        else:
            with open(os.path.join(got_dir, "output_0.pb"), "rb") as f:
                from onnx import TensorProto
                t = TensorProto()
                t.ParseFromString(f.read())
            got = tensor_float32(t)
            scale = float(np.abs(ref).max()) or 1.0
            err = f"{float(np.abs(got - ref).max()) / scale:.2e}"
        # The peer computes as the case does: tf32 GEMMs for tf32.
        torch.backends.cuda.matmul.allow_tf32 = c["precision"] == "tf32"
        if c["precision"] == "bf16":
            model = model.to(torch.bfloat16)
            x = [t.to(torch.bfloat16) if t.is_floating_point() else t
                 for t in x]
        fused = fused_attention(fill_params(made[c["model"]][0]()))
        if fused is not None:
            fused = fused.cuda()
            if c["precision"] == "bf16":
                fused = fused.to(torch.bfloat16)
        pcc_ms, torch_ms, sdpa_ms, compile_ms = [], [], [], []
        # The compiled peer: torch's fused attention where it has one.
        best = torch.compile(fused if fused is not None else model) \
            if compile_peer else None
        for _ in range(repeats):
            if not r.returncode:
                pcc_ms.append(pcc_time(exe, data, iters))
            torch_ms.append(torch_time(model, x, iters))
            if fused is not None:
                sdpa_ms.append(torch_time(fused, x, iters))
            if compile_peer:
                ms = compiled_time(best, x, iters)
                if ms is None:
                    compile_peer = False
                else:
                    compile_ms.append(ms)
        p = statistics.median(pcc_ms) if pcc_ms else float("nan")
        t = statistics.median(torch_ms)
        f = statistics.median(sdpa_ms) if sdpa_ms else float("nan")
        g = statistics.median(compile_ms) if compile_ms else float("nan")
        row = {"case": c["case"], "pcc_ms": p, "torch_ms": t,
               "torch_sdpa_ms": f, "max_rel_err": err}
        extra = ""
        if compile_ms:
            row["torch_compile_ms"] = g
            extra = f"| {g:.3f} | {g / p:.2f} "
        rows.append(row)
        print(f"| {c['case']} | {p:.3f} | {t:.3f} | {t / p:.2f} | {f:.3f} "
              f"| {f / p:.2f} {extra}| {err} |", flush=True)
        del model, x, fused, best
        torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("pcc")
    b.add_argument("out")
    b.add_argument("--only", nargs="+", help="these models only")
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--iters", type=int, default=20)
    r.add_argument("--repeats", type=int, default=3)
    r.add_argument("--json", help="also write the rows here")
    r.add_argument("--only", nargs="+", help="these cases only")
    r.add_argument("--compile", action="store_true",
                   help="also time torch.compile of the best eager module")
    a = ap.parse_args()
    if a.cmd == "build":
        build(a.pcc, a.out, a.only)
    else:
        rows = run(a.out, a.iters, a.repeats, a.only, a.compile)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()

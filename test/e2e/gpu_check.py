#!/usr/bin/env python3
"""--check the CUDA target's programs on a GPU (ctest -L gpu).

Usage: gpu_check.py OUTDIR [--build-only | --run-only] [--mpirun CMD]

Builds (pcc --target cuda) every test model at 1 rank in fp32 and bf16, and
GPT, the MLP and the encoder under dp2, tp2 and pp2, and attention over 160
tokens (several key tiles, causal tiles skipped, padding masks; heads of 64
and 128 features, which 16-bit programs run on tensor cores) at 1 rank,
causal masks of make_masked_attention.py's four forms at 1 rank,
under ring and Ulysses sequence parallelism and GPT under 2D tensor
parallelism, then runs each with
--check (of the first run and, with --bench 3, of the timed runs, which
replay a recorded CUDA graph) against PyTorch's float32 outputs: fp32 at rtol 1e-3 / atol 1e-4,
bf16 at the CPU target's stated 16-bit tolerance (rtol 1e-2, atol 5e-2).
Multi-rank runs use --comm mpi, so they fit on one GPU. The two halves can
run on different machines: --build-only where pcc is, --run-only where the
GPU is (it needs only python3 and mpirun). Without a GPU the run exits 77,
which ctest reports as skipped.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["mlp", "encoder", "gpt", "bert", "vit", "cnn", "gpt_bf16",
          "gpt_long", "bert_long", "gpt_heads64", "bert_heads128",
          "rnn_tagger", "einsum", "upsample", "topk", "scatter"]
# Not run in bf16: scores rounded to 8 bits tie or swap places, and the
# indices TopK returns then differ from float32's by whole positions.
NO_BF16 = {"topk"}
# Band masks by index (make_masked_attention.py): -inf and finite fills, an
# offset band, a band beside a padding mask.
MASKED = ["causal_inf", "causal_finite", "offset", "causal_padding"]
PLANS = {"dp2": (["--dp", "2"], 2), "tp2": (["--tp", "2", "--tp-mode", "1d"], 2),
         "pp2": (["--pp", "2"], 2)}
MULTI = ["mlp", "encoder", "gpt"]
# (name, model, flags, ranks): the other parallelisms, once each.
OTHERS = [("gpt_long-ring2", "gpt_long", ["--sp", "2", "--sp-mode", "ring"], 2),
          ("bert_long-ulysses2", "bert_long",
           ["--sp", "2", "--sp-mode", "ulysses"], 2),
          ("gpt-2d4", "gpt", ["--tp", "4", "--tp-mode", "2d"], 4)]
SKIP = 77


def cases():
    """(name, model, pcc flags, ranks, tolerances)."""
    fp32 = ["--rtol", "1e-3", "--atol", "1e-4"]
    bf16 = ["--rtol", "1e-2", "--atol", "5e-2"]
    for m in MODELS + MASKED:
        native16 = m.endswith("_bf16")
        yield f"{m}-1", m, [], 1, bf16 if native16 else fp32
        if not native16 and m not in NO_BF16:
            yield f"{m}-bf16", m, ["--precision", "bf16"], 1, bf16
    for m in MULTI:
        for plan, (flags, ranks) in PLANS.items():
            yield f"{m}-{plan}", m, flags, ranks, fp32
    for name, m, flags, ranks in OTHERS:
        yield name, m, flags, ranks, fp32


def build(out):
    subprocess.run([sys.executable, os.path.join(HERE, "..", "models",
                                                 "export_models.py"),
                    os.path.join(out, "models"), "--only"] + MODELS,
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, os.path.join(HERE,
                                                 "make_masked_attention.py"),
                    os.path.join(out, "models")], check=True)
    for name, m, flags, ranks, _ in cases():
        subprocess.run(["pcc", os.path.join(out, "models", m, "model.onnx"),
                        "--target", "cuda", "--quiet", "-o",
                        os.path.join(out, name)] + flags, check=True)


def have_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False, "nvidia-smi not found"
    r = subprocess.run([smi, "-L"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return r.returncode == 0 and "GPU" in r.stdout, r.stdout.strip()


def run(out, mpirun):
    ok, why = have_gpu()
    if not ok:
        print(f"skipped: no GPU ({why})")
        return SKIP
    failed = 0
    for name, m, _, ranks, tol in cases():
        exe = os.path.join(out, name, "model")
        data = os.path.join(out, "models", m, "test_data_set_0")
        # --bench also checks the timed runs: replays of the recorded CUDA
        # graph where the program is recorded.
        cmd = [exe, "--check", data, "--bench", "3"] + tol
        if ranks > 1:
            cmd = shlex.split(mpirun) + ["-np", str(ranks)] + cmd + [
                "--comm", "mpi"]
        r = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=600)
        lines = r.stdout.strip().splitlines()
        print(f"{name}: {' | '.join(lines[-2:]) if lines else '(no output)'}",
              flush=True)
        failed += r.returncode != 0
    print(f"gpu check: {failed} failed")
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--build-only", action="store_true")
    p.add_argument("--run-only", action="store_true")
    p.add_argument("--mpirun", default=os.path.join(HERE, "mpirun.sh"))
    a = p.parse_args()
    if not a.run_only:
        ok, why = have_gpu()
        if not ok and not a.build_only:
            print(f"skipped: no GPU ({why})")
            return SKIP
        build(a.out)
    if a.build_only:
        return 0
    return run(a.out, a.mpirun)


if __name__ == "__main__":
    sys.exit(main())

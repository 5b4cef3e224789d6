#!/usr/bin/env python3
"""--check the CUDA target's programs on a GPU (ctest -L gpu).

Usage: gpu_check.py OUTDIR [--build-only | --run-only] [--mpirun CMD]
                    [--only CASE...] [--target cuda|cpu]

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
Multi-rank runs use --comm mpi, so they fit on one GPU.

Training steps too (pcc --train --target cuda): the models of
train_check.py, at 1 rank and under dp2, tp2, pp2 x mb2 (1F1B), pp2 x mb4
(ZB-H1), ZeRO-3, gradient accumulation, ring sp2 and 2D, with dropout, in bf16 and fp16 (dynamic loss
scaling), each trained for 4 steps against PyTorch's losses for the same
batches (computed in the build half, here on the CPU): fp32 at rtol 1e-3,
16-bit at 1e-2 (train-precision.test's bounds); some also run 2 steps,
--save, and --resume for 2 more, which must print the same losses to the
bit (the save reads back the device copies of the weights).

The two halves can run on different machines: --build-only where pcc is,
--run-only where the GPU is (it needs only python3 and mpirun). Without a
GPU the run exits 77, which ctest reports as skipped.
"""
import argparse
import json
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
# (name, train_check.py model, optimizer, strategy, precision, resumed).
TRAINING = [
    ("train-gpt-1", "gpt", "adamw", "1", None, True),
    ("train-gpt-dp2", "gpt", "adamw", "dp=2", None, False),
    ("train-gpt-tp2", "gpt", "adamw", "tp=2", None, False),
    ("train-gpt-pp2mb2", "gpt", "adamw", "pp=2,mb=2,sched=1f1b", None, True),
    ("train-gpt-pp2mb4-zb", "gpt", "adamw", "pp=2,mb=4,sched=zb-h1", None,
     True),
    ("train-gpt-dp2zero3", "gpt", "adamw", "dp=2,zero=3", None, True),
    ("train-gpt-dp2mb2", "gpt", "adamw", "dp=2,mb=2", None, False),
    ("train-gpt-ring2", "gpt", "adamw", "sp=2,spm=ring", None, False),
    ("train-gpt-2d4", "gpt", "adamw", "tp=4,mode=2d", None, False),
    ("train-gpt-bf16", "gpt", "sgd", "1", "bf16", False),
    ("train-gpt-fp16", "gpt", "adamw", "1", "fp16", True),
    ("train-gpt-dropout-1", "gpt-dropout", "sgd", "1", None, True),
    ("train-gpt-dropout-tp2", "gpt-dropout", "sgd", "tp=2", None, False),
    ("train-mlp-1", "mlp", "sgd", "1", None, False),
    ("train-vit-1", "vit", "adamw", "1", None, False),
    ("train-t5-1", "t5", "adamw", "1", None, False),
    ("train-resnet-1", "resnet", "adamw", "1", None, False),
    ("train-cnn-1", "cnn", "sgd", "1", None, False),
]
TRAIN_STEPS = 4


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


def build(out, only):
    inference = [c for c in cases() if only(c[0])]
    if inference:
        subprocess.run([sys.executable, os.path.join(HERE, "..", "models",
                                                     "export_models.py"),
                        os.path.join(out, "models"), "--only"] + MODELS,
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, os.path.join(
            HERE, "make_masked_attention.py"), os.path.join(out, "models")],
            check=True)
    for name, m, flags, ranks, _ in inference:
        subprocess.run(["pcc", os.path.join(out, "models", m, "model.onnx"),
                        "--target", TARGET[0], "--quiet", "-o",
                        os.path.join(out, name)] + flags, check=True)
    build_training(out, only)


def build_training(out, only):
    """Each training case's CUDA program and PyTorch's losses for it."""
    sys.path.insert(0, HERE)
    import train_check  # torch: only where pcc is
    references = {}
    for name, m, optimizer, strategy, precision, _ in TRAINING:
        if not only(name):
            continue
        work = os.path.join(out, "train-models", m)
        if m not in references:
            os.makedirs(work, exist_ok=True)
            references[m] = train_check.export(work, m, TRAIN_STEPS)
        model, batches = references[m]
        if (m, optimizer) not in references:
            references[m, optimizer], _ = train_check.torch_train(
                model, batches, optimizer, TRAIN_STEPS,
                os.path.join(work, "model.onnx"))
        flags, ranks, exe = train_check.strategy_plan(strategy)
        case = os.path.join(out, name)
        subprocess.run(["pcc", os.path.join(work, "model.onnx"), "--target",
                        TARGET[0], "--quiet", "-o", case] +
                       train_check.training_flags(m, optimizer, precision) +
                       flags, check=True)
        with open(os.path.join(case, "reference.json"), "w") as f:
            json.dump({"model": m, "losses": references[m, optimizer],
                       "ranks": ranks, "flags": exe,
                       "rtol": 1e-2 if precision else 1e-3}, f)


def train_run(mpirun, ranks, exe, batches, steps, extra):
    """The losses a training run prints (None when it fails), and its
    last lines."""
    cmd = [exe, "--train", batches, "--steps", str(steps)] + extra
    if ranks > 1:
        cmd = shlex.split(mpirun) + ["-np", str(ranks)] + cmd + ["--comm",
                                                                 "mpi"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    losses = [json.loads(line)["loss"] for line in r.stdout.splitlines()
              if line.startswith("{")]
    tail = " | ".join(r.stdout.strip().splitlines()[-2:])
    return (losses if r.returncode == 0 else None), tail


def run_training(out, mpirun, only):
    """Trains each case; the number that failed."""
    failed = 0
    for name, _, _, _, _, resumed in TRAINING:
        if not only(name):
            continue
        case = os.path.join(out, name)
        with open(os.path.join(case, "reference.json")) as f:
            ref = json.load(f)
        exe = os.path.join(case, "model")
        batches = os.path.join(out, "train-models", ref["model"], "batches")
        want, ranks = ref["losses"], ref["ranks"]
        got, tail = train_run(mpirun, ranks, exe, batches, len(want),
                              ref["flags"])
        ok = got is not None and len(got) == len(want) and all(
            g is not None and abs(g - w) <= 1e-6 + ref["rtol"] * abs(w)
            for g, w in zip(got, want))
        worst = max((abs(g - w) / abs(w) for g, w in zip(got or [], want)
                     if g is not None), default=float("inf"))
        line = (f"{name}: losses {'PASS' if ok else 'FAIL'} "
                f"max_rel_err={worst:.1e} (rtol {ref['rtol']:g})")
        if resumed and ok:
            half = len(want) // 2
            saved = os.path.join(case, "saved")
            first, _ = train_run(mpirun, ranks, exe, batches, half,
                                 ref["flags"] + ["--save", saved])
            rest, _ = train_run(mpirun, ranks, exe, batches, len(want) - half,
                                ref["flags"] + ["--resume", saved])
            same = first is not None and rest is not None and \
                first + rest == got
            ok &= same
            line += f" resumed {'PASS' if same else 'FAIL'}"
        if not ok:
            line += f"\n  pcc: {got}\n  pytorch: {want}\n  {tail}"
        print(line, flush=True)
        failed += not ok
    return failed


# Where the programs run: cuda, or cpu to check this script itself (and the
# CPU programs) on a machine without a GPU.
TARGET = ["cuda"]


def have_gpu():
    if TARGET[0] == "cpu":
        return True, "cpu ranks"
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False, "nvidia-smi not found"
    r = subprocess.run([smi, "-L"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return r.returncode == 0 and "GPU" in r.stdout, r.stdout.strip()


def run(out, mpirun, only):
    ok, why = have_gpu()
    if not ok:
        print(f"skipped: no GPU ({why})")
        return SKIP
    failed = 0
    for name, m, _, ranks, tol in cases():
        if not only(name):
            continue
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
    failed += run_training(out, mpirun, only)
    print(f"gpu check: {failed} failed")
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--build-only", action="store_true")
    p.add_argument("--run-only", action="store_true")
    p.add_argument("--mpirun", default=os.path.join(HERE, "mpirun.sh"))
    p.add_argument("--only", nargs="+", metavar="CASE",
                   help="these cases alone (names as printed)")
    p.add_argument("--target", choices=("cuda", "cpu"), default="cuda",
                   help="cpu: build and run the same cases on CPU ranks "
                        "(checks this script where there is no GPU)")
    a = p.parse_args()
    TARGET[0] = a.target
    names = {c[0] for c in cases()} | {c[0] for c in TRAINING}
    unknown = sorted(set(a.only or ()) - names)
    if unknown:
        p.error(f"unknown case {unknown[0]}")
    only = (lambda name: name in a.only) if a.only else (lambda name: True)
    if not a.run_only:
        ok, why = have_gpu()
        if not ok and not a.build_only:
            print(f"skipped: no GPU ({why})")
            return SKIP
        build(a.out, only)
    if a.build_only:
        return 0
    return run(a.out, a.mpirun, only)


if __name__ == "__main__":
    sys.exit(main())

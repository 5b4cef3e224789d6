#!/usr/bin/env python3
"""Is the searched plan at least as fast as every plan a user can force?

Issue 16, item 1: the search space contains every plan that can be forced,
so `pcc plan` must predict its own choice at least as fast as each forced
family: pure data parallelism; tensor parallelism 1D (searched layouts and
Megatron's), 2D, 2.5D and 3D; pipelines; sequence parallelism (Ulysses,
ring); with --train, recompute on and off; and mixes of them. For every
family that forms on the device count and fits in memory, this compares the
predicted step times and prints one line per family.

  /usr/bin/python3 bench/plan/forced_families.py --pcc build/bin/pcc \\
      --devices 8 [--train] [--cluster dgx-a100] MODEL.onnx [MODEL.onnx ...]

Exit status 1 when a forced plan is predicted faster than the search's.
"""
import argparse
import json
import subprocess
import sys

# (name, flags): {n} is the device count, {h} half of it, {q} a quarter.
FAMILIES = [
    ("data parallel", "--dp {n}"),
    ("tensor 1d", "--tp {n} --tp-mode 1d"),
    ("tensor 1d megatron", "--tp {n} --tp-layout megatron"),
    ("tensor 1d megatron+sp", "--tp {n} --sequence-parallel"),
    ("tensor 2d", "--tp 4 --tp-mode 2d"),
    ("tensor 2.5d", "--tp 8 --tp-mode 2.5d --tp-depth 2"),
    ("tensor 3d", "--tp 8 --tp-mode 3d"),
    ("pipeline", "--pp {h} --dp 2"),
    ("pipeline deep", "--pp {n}"),
    ("sequence ulysses", "--sp {h} --sp-mode ulysses"),
    ("sequence ring", "--sp {h} --sp-mode ring"),
    ("tp x pp x dp", "--tp 2 --pp 2 --dp {q}"),
    ("tp megatron x dp", "--tp 2 --tp-layout megatron --dp {h}"),
    ("tp x sp", "--tp 2 --sp 2 --dp {q}"),
]
TRAIN_ONLY = [("recompute", "--recompute full"), ("no recompute", "--recompute none"),
              ("selective recompute", "--recompute selective"),
              ("pipeline interleaved", "--pp {h} --dp 2 --pp-virtual 2"),
              ("pipeline 1f1b", "--pp {h} --dp 2 --pp-schedule 1f1b"),
              ("pipeline zb-h1", "--pp {h} --dp 2 --pp-schedule zb-h1"),
              ("no zero", "--zero 0"), ("data zero1", "--dp {n} --zero 1"),
              ("data zero3", "--dp {n} --zero 3"),
              ("pipeline zero1", "--pp {h} --dp 2 --zero 1")]


def plan(pcc, model, devices, cluster, train, flags):
    cmd = [pcc, "plan", model, "--devices", str(devices), "--cluster",
           cluster, "--format", "json", "--progress", "never"] + flags
    if train:
        cmd.append("--train")
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1] if out.stderr else ""
    return json.loads(out.stdout), ""


def check(pcc, model, devices, cluster, train, only=None):
    searched, err = plan(pcc, model, devices, cluster, train, [])
    if searched is None:
        print(f"{model}: the search failed: {err}")
        return False
    best = searched["predicted"]["step_time_s"]
    print(f"{model}: searched {searched['label']}: {best * 1e3:.4f} ms")
    ok = True
    n = devices
    families = only or FAMILIES + (TRAIN_ONLY if train else [])
    for name, pattern in families:
        if ("{q}" in pattern and n % 4) or ("{h}" in pattern and n % 2):
            continue
        flags = pattern.format(n=n, h=n // 2, q=n // 4).split()
        forced, err = plan(pcc, model, devices, cluster, train, flags)
        if forced is None:
            print(f"  {name:24} {' '.join(flags):40} not formed: {err}")
            continue
        t = forced["predicted"]["step_time_s"]
        if not forced["fits"]:
            print(f"  {name:24} {' '.join(flags):40} does not fit")
            continue
        worse = t < best * (1 - 1e-9)
        ok &= not worse
        print(f"  {name:24} {' '.join(flags):40} {t * 1e3:10.4f} ms "
              f"{'FASTER THAN THE SEARCH' if worse else 'ok'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pcc", default="pcc")
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--cluster", default="dgx-a100")
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--force", action="append", metavar="NAME=FLAGS",
                    help="check only these plans (repeatable), e.g. "
                    "'deep pipeline=--dp 6 --pp 64 --tp 8'")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    only = [tuple(f.split("=", 1)) for f in args.force or []]
    if any(len(f) != 2 for f in only):
        ap.error("--force takes NAME=FLAGS")
    ok = all([check(args.pcc, m, args.devices, args.cluster, args.train, only)
              for m in args.models])
    print("searched <= every forced family" if ok else
          "a forced plan beats the search")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

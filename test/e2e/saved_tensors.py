#!/usr/bin/env python3
"""Prints tensors a training run saved (--save DIR), for FileCheck.

Usage: saved_tensors.py DIR [--model MODEL.onnx] NAME...
  For each NAME, one line "NAME: V" (the value of a one-element tensor) or
  "NAME: max_abs=M" (its largest magnitude); with --model, also the largest
  difference from MODEL's initializer of that name ("changed=D").
"""
import argparse
import os

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--model")
    p.add_argument("names", nargs="+")
    args = p.parse_args()
    initial = {}
    if args.model:
        initial = {t.name: numpy_helper.to_array(t)
                   for t in onnx.load(args.model).graph.initializer}
    for name in args.names:
        path = os.path.join(args.dir, name.replace("%", "%25")
                            .replace("/", "%2F") + ".pb")
        a = numpy_helper.to_array(onnx.load_tensor(path)).astype(np.float64)
        line = (f"{name}: {a.reshape(-1)[0]:g}" if a.size == 1
                else f"{name}: max_abs={np.max(np.abs(a)):g}")
        if name in initial:
            line += f" changed={np.max(np.abs(a - initial[name])):g}"
        print(line)


if __name__ == "__main__":
    main()

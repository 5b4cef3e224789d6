#!/usr/bin/env python3
"""Writes TensorProto input/output sets for executable-errors.test."""
import os
import sys

import numpy as np
from onnx import numpy_helper

root = sys.argv[1]


def save(folder, name, array):
    os.makedirs(os.path.join(root, folder), exist_ok=True)
    with open(os.path.join(root, folder, name), "wb") as f:
        f.write(numpy_helper.from_array(array).SerializeToString())


x = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], dtype=np.float32)
save("data", "input_0.pb", x)
b = np.array([0.5, -0.5, 1.0], dtype=np.float32)
save("data", "output_0.pb", np.maximum(x + b, 0))
save("wrong", "input_0.pb", x)
save("wrong", "output_0.pb", np.maximum(x + b, 0) + 1)
save("shape", "input_0.pb", x.reshape(3, 2))
save("dtype", "input_0.pb", x.astype(np.int64))
save("extra", "input_0.pb", x)
save("extra", "input_1.pb", x)
os.makedirs(os.path.join(root, "garbage"), exist_ok=True)
with open(os.path.join(root, "garbage", "input_0.pb"), "wb") as f:
    f.write(b"\xff\xff\xff\xff not a tensor")

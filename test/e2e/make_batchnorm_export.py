#!/usr/bin/env python3
"""Writes DIR/model.onnx: train_check.py's ResNet-style model exported in
training mode (BatchNormalization with training_mode=1), and
DIR/test_data_set_0 with one batch and the loss PyTorch computes for it in
training mode (the batch's own statistics): the reference an inference
compile of a training export must match.

Usage: make_batchnorm_export.py DIR
"""
import os
import sys

import numpy as np
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_check  # noqa: E402


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    model, batches = train_check.export(out, "resnet", 1)
    model.train()
    with torch.no_grad():
        loss = model(*(torch.from_numpy(a) for a in batches[0]))
    data = os.path.join(out, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    tensors = [(f"input_{i}", a) for i, a in enumerate(batches[0])]
    tensors.append(("output_0", np.asarray(loss.numpy(), np.float32)))
    for name, a in tensors:
        with open(os.path.join(data, name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(a).SerializeToString())


if __name__ == "__main__":
    main()

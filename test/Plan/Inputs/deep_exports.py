#!/usr/bin/env python3
"""Exports the test models' BERT-style encoder (nn.TransformerEncoder with
a padding mask) and T5-style encoder-decoder at a given depth, each layer
with its own weights, for checking that `pcc plan` finds their repeated
layers.

Usage: deep_exports.py bert|t5 LAYERS OUT.onnx
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "models"))
from export_models import T5, Bert  # noqa: E402


def main(kind, layers, out):
    torch.manual_seed(0)
    if kind == "bert":
        model = Bert(n_layer=layers, max_len=32)
        args = (torch.randint(0, 128, (4, 32)),
                torch.zeros(4, 32, dtype=torch.bool))
    else:
        model = T5(layers=layers)
        args = (torch.randint(0, 128, (4, 32)), torch.randint(0, 128, (4, 32)))
    # nn.TransformerEncoder deep-copies one layer: without this every layer
    # holds equal values, which the exporter would store once.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    model.eval()
    torch.onnx.export(model, args, out, opset_version=14)
    print(out, sum(p.numel() for p in model.parameters()), "parameters")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])

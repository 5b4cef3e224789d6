#!/usr/bin/env python3
"""Copies a token input with one id out of the vocabulary, in the last batch
row (so under data parallelism only the last rank sees it).

Usage: make_bad_tokens.py SRC_DIR DST_DIR
"""
import os
import sys

import onnx
from onnx import numpy_helper

src, dst = sys.argv[1:3]
tokens = numpy_helper.to_array(onnx.load_tensor(os.path.join(src, "input_0.pb"))).copy()
tokens[-1, 3] = 999
os.makedirs(dst, exist_ok=True)
with open(os.path.join(dst, "input_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(tokens, "tokens").SerializeToString())

#!/usr/bin/env python3
"""Prints each plan's predicted gradient-sum time (pcc plan --format json),
in microseconds, one line per plan: `NAME: gradient US us`."""
import json
import sys

for path in sys.argv[1:]:
    with open(path) as f:
        predicted = json.load(f)["predicted"]
    us = predicted["gradient_allreduce_s"] * 1e6
    print(f"{path.rsplit('/', 1)[-1]}: gradient {us:.0f} us")

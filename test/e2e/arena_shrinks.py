#!/usr/bin/env python3
"""Reads train_check.py --memory output (FILE) whose first two lines are a
strategy and the same with recompute=full, and prints whether the second's
arena is smaller: "arena with recompute A < without B" or ">=" (a failure)."""
import re
import sys

arenas = [int(m) for m in re.findall(r"arena=(\d+)", open(sys.argv[1]).read())]
if len(arenas) < 2:
    sys.exit("error: %s: fewer than two arena figures" % sys.argv[1])
without, recomputed = arenas[0], arenas[1]
print("arena with recompute %d %s without %d"
      % (recomputed, "<" if recomputed < without else ">=", without))
sys.exit(0 if recomputed < without else 1)

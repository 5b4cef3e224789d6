#!/usr/bin/env python3
"""usage: arena_shrinks.py FILE [FIELD]

Reads train_check.py --memory output whose first two lines are a strategy
and the same with recompute=full, and prints whether the second's FIELD
(arena, the default, or stash) is smaller: "arena with recompute A <
without B", or ">=" and exit status 1."""
import re
import sys

field = sys.argv[2] if len(sys.argv) > 2 else "arena"
text = open(sys.argv[1]).read()
values = [int(m) for m in re.findall(r"\b%s=(\d+)" % field, text)]
if len(values) < 2:
    sys.exit("error: %s: fewer than two %s figures" % (sys.argv[1], field))
without, recomputed = values[0], values[1]
print("%s with recompute %d %s without %d"
      % (field, recomputed, "<" if recomputed < without else ">=", without))
sys.exit(0 if recomputed < without else 1)

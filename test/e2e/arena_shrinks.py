#!/usr/bin/env python3
"""usage: arena_shrinks.py FILE [FIELD] [--selective]

Reads train_check.py --memory output whose first two lines are a strategy
and the same with recompute=full, and prints whether the second's FIELD
(arena, the default, or stash) is smaller: "arena with recompute A <
without B", or ">=" and exit status 1. With --selective the first three
lines are a strategy without recompute, with recompute=selective and with
recompute=full, and it prints whether selective's FIELD lies strictly
between: "arena none A > selective B > full C"."""
import re
import sys

args = [a for a in sys.argv[1:] if a != "--selective"]
selective = "--selective" in sys.argv[1:]
field = args[1] if len(args) > 1 else "arena"
text = open(args[0]).read()
values = [int(m) for m in re.findall(r"\b%s=(\d+)" % field, text)]
if len(values) < (3 if selective else 2):
    sys.exit("error: %s: too few %s figures" % (args[0], field))
if selective:
    none, sel, full = values[:3]
    ok = none > sel > full
    print("%s none %d %s selective %d %s full %d"
          % (field, none, ">" if none > sel else "<=", sel,
             ">" if sel > full else "<=", full))
    sys.exit(0 if ok else 1)
without, recomputed = values[0], values[1]
print("%s with recompute %d %s without %d"
      % (field, recomputed, "<" if recomputed < without else ">=", without))
sys.exit(0 if recomputed < without else 1)

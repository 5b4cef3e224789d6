#!/usr/bin/env python3
"""Summarises a `model --trace` file for FileCheck: per row (rank), the
number of events of each kind and the microbatches they carry.

Usage: check_trace.py TRACE.json
Prints, per rank: "rank R (stage S): compute=N send=N recv=N ... mb=0,1"
and fails if the file is not a Chrome trace (traceEvents with ph/ts/dur)."""
import collections
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        trace = json.load(f)
    rows, kinds, mbs = {}, collections.defaultdict(collections.Counter), \
        collections.defaultdict(set)
    for e in trace["traceEvents"]:
        if e["ph"] == "M":
            rows[e["tid"]] = e["args"]["name"]
            continue
        assert e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0, e
        kinds[e["tid"]][e["name"]] += 1
        mbs[e["tid"]].add(e["args"]["microbatch"])
    for tid in sorted(rows):
        counts = " ".join(f"{k}={v}" for k, v in sorted(kinds[tid].items()))
        mb = ",".join(str(m) for m in sorted(mbs[tid]))
        print(f"{rows[tid]}: {counts} mb={mb}")


if __name__ == "__main__":
    main()

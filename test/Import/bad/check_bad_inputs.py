#!/usr/bin/env python3
"""Runs `pcc FILE --emit=mlir` on every malformed model make_bad_inputs.py
writes and checks the contract for bad input: exit status 1..127, nothing on
stdout, exactly one stderr line starting with "error:" that contains the
expected phrase, and a prompt answer. Valid files in the set must import.

usage: check_bad_inputs.py PCC DIR   (DIR holds the files and expected.txt)

The time limit per file is 3 s (a loaded 2-core CI machine runs the suite
with two tests at once); PCC_TIME_SCALE multiplies it (sanitizer
builds run several times slower).
"""
import os
import subprocess
import sys
import time

TIME_LIMIT_S = 3.0 * float(os.environ.get("PCC_TIME_SCALE", "1"))


def main():
    pcc, folder = sys.argv[1], sys.argv[2]
    failures = []
    count = 0
    with open(os.path.join(folder, "expected.txt")) as f:
        cases = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    for name, expected in cases:
        count += 1
        path = os.path.join(folder, name)
        start = time.monotonic()
        proc = subprocess.run([pcc, path, "--emit=mlir"], capture_output=True,
                              text=True, timeout=30)
        elapsed = time.monotonic() - start
        err_lines = proc.stderr.splitlines()
        problems = []
        if expected == "OK":
            if proc.returncode != 0:
                problems.append(f"exit {proc.returncode}: {proc.stderr.strip()}")
            elif "func.func @main" not in proc.stdout:
                problems.append("no module printed")
        else:
            if not 1 <= proc.returncode <= 127:
                problems.append(f"exit status {proc.returncode}")
            if proc.stdout:
                problems.append("wrote to stdout")
            if len(err_lines) != 1:
                problems.append(f"{len(err_lines)} stderr lines")
            if not err_lines or not err_lines[0].startswith("error:"):
                problems.append("stderr does not start with 'error:'")
            if expected.lower() not in proc.stderr.lower():
                problems.append(f"message lacks '{expected}'")
        if elapsed > TIME_LIMIT_S:
            problems.append(f"took {elapsed:.2f}s")
        status = "ok" if not problems else "FAIL " + "; ".join(problems)
        print(f"{name}: {status}: {proc.stderr.strip()}")
        if problems:
            failures.append(name)
    print(f"{count - len(failures)} passed, {len(failures)} failed")
    return 1 if failures or count == 0 else 0


if __name__ == "__main__":
    sys.exit(main())

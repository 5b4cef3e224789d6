#!/usr/bin/env python3
"""Stops one rank of a running job and reports how the job ends.

usage: hung_rank.py MPIRUN MODEL INPUTS RANK TIMEOUT

Runs `MPIRUN -np 2 MODEL --inputs INPUTS --bench 1000000 --timeout TIMEOUT`,
waits until both ranks are running, sends SIGSTOP to rank RANK (found by its
OMPI_COMM_WORLD_RANK among the processes running MODEL), and waits for the
job to end. Prints the job's stderr, its exit status and whether it ended
within TIMEOUT + 15 seconds. Always kills what is left.
"""
import os
import signal
import subprocess
import sys
import time


def ranks_of(model):
    """pid by OMPI rank for every process running `model`."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if exe != os.path.realpath(model):
            continue
        for e in env:
            if e.startswith(b"OMPI_COMM_WORLD_RANK="):
                found[int(e.split(b"=")[1])] = int(pid)
    return found


def main():
    mpirun, model, inputs, rank, timeout = sys.argv[1:6]
    cmd = [mpirun, "-np", "2", model, "--inputs", inputs, "--bench", "1000000",
           "--timeout", timeout]
    job = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    stopped = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and stopped is None:
            pids = ranks_of(model)
            if len(pids) == 2:
                time.sleep(0.5)  # let them get into the benchmark loop
                stopped = pids[int(rank)]
                os.kill(stopped, signal.SIGSTOP)
            time.sleep(0.1)
        start = time.monotonic()
        _, err = job.communicate(timeout=float(timeout) + 15)
        print(err.strip())
        print(f"exit status {job.returncode}")
        print("ended in time" if time.monotonic() - start < float(timeout) + 15
              else "ended late")
    except subprocess.TimeoutExpired:
        print("HUNG")
    finally:
        for pid in ranks_of(model).values():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        job.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())

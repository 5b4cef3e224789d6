#!/usr/bin/env python3
"""Stops one rank of a running job and reports how the job ends.

usage: hung_rank.py MPIRUN MODEL INPUTS RANK TIMEOUT

Runs `MPIRUN -np 2 MODEL --inputs INPUTS --bench 1000000 --timeout TIMEOUT`,
waits until both ranks are running, sends SIGSTOP to rank RANK (found by its
OMPI_COMM_WORLD_RANK among the job's descendants), and waits for mpirun to
end. Prints the job's stderr, its exit status and whether it ended
within TIMEOUT + 15 seconds. Always kills what is left.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time


def parent_of(pid):
    """The parent pid of `pid`, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # The command name may hold spaces and parentheses: split after it.
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def descends_from(pid, ancestor):
    for _ in range(64):
        pid = parent_of(pid)
        if pid is None or pid <= 1:
            return False
        if pid == ancestor:
            return True
    return False


def ranks_of(job):
    """pid by OMPI rank for every MPI process started under `job`.

    Ranks are found by ancestry and environment rather than by executable
    path: paths seen through /proc differ from the test's on some mounts."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if not descends_from(int(pid), job):
            continue
        for e in env:
            if e.startswith(b"OMPI_COMM_WORLD_RANK="):
                found[int(e.split(b"=")[1])] = int(pid)
    return found


def main():
    mpirun, model, inputs, rank, timeout = sys.argv[1:6]
    cmd = [mpirun, "-np", "2", model, "--inputs", inputs, "--bench", "1000000",
           "--timeout", timeout]
    # stderr goes to a file, not a pipe: a rank left behind would keep a pipe
    # open after mpirun has ended, and the job would look hung.
    errfile = tempfile.TemporaryFile(mode="w+")
    job = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errfile,
                           text=True)
    pids = {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(pids) < 2:
            pids = ranks_of(job.pid)
            time.sleep(0.1)
        if len(pids) < 2:
            print(f"ranks not found: {pids}")
            return 0
        time.sleep(0.5)  # let them get into the benchmark loop
        os.kill(pids[int(rank)], signal.SIGSTOP)
        start = time.monotonic()
        try:
            job.wait(timeout=float(timeout) + 15)
        except subprocess.TimeoutExpired:
            print("HUNG")
        errfile.seek(0)
        print(errfile.read().strip())
        print(f"exit status {job.returncode}")
        print("ended in time" if time.monotonic() - start < float(timeout) + 15
              else "ended late")
    finally:
        for pid in pids.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        job.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())

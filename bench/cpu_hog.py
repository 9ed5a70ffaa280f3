"""Run a command while every core is kept busy, the way CI's neighbours load a shared machine.

    .venv/bin/python -m bench.cpu_hog [--per-core N] -- make test

Starts N spinning processes per core (default 1), runs the command, stops them, and prints the command's
wall time and the load averages seen; exits with the command's status. `make test-loaded` runs the suite
this way: a test that passes only on a quiet machine fails here first.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time

from harness.cpu_load import spinning


def _sample_load(samples: list[float], stop: threading.Event) -> None:
    while not stop.wait(5):
        samples.append(os.getloadavg()[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--per-core", type=int, default=1, help="spinning processes per core (default 1)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = [part for part in args.command if part != "--"] or ["make", "test"]

    samples: list[float] = []
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_load, args=(samples, stop), daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        with spinning(args.per_core):
            status = subprocess.call(command)
    finally:
        stop.set()
    elapsed = time.monotonic() - started
    load = (
        f"load average mean {sum(samples) / len(samples):.1f}, max {max(samples):.1f}"
        if samples
        else "load n/a"
    )
    print(
        f"cpu_hog: {(os.cpu_count() or 1) * args.per_core} spinning processes; {' '.join(command)} exited {status} in {elapsed:.0f} s; {load}"
    )
    return status


if __name__ == "__main__":
    sys.exit(main())

"""`python -m bench` (`make bench`): every benchmark module in bench/, each in a subprocess of its own.

One failing (or running past its bound) does not stop the others; the exit status is non-zero if any failed.
Names given on the command line run only those: `python -m bench chain_burst chain_recovery`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
# raw_dramatiq can run alone, but every chain benchmark already runs it as its baseline
# cpu_hog wraps a command (`make test-loaded`); suite_cpu runs the test suite (docs/testing.md)
SKIP = {"__main__", "raw_dramatiq", "cpu_hog", "suite_cpu"}
TIMEOUT_S = 240  # each benchmark bounds itself (< ~3 min); this is the backstop
# abuse.py runs each attack twice (~8-11 min); chaos.py one fresh environment per fault;
# live_fanout opens 10,000 subscriptions twice (with and without gc.freeze); chain_scale runs five bursts;
# create_tasks measures two builds of the API when given --compare
LONGER_TIMEOUT_S = {
    "abuse": 900,
    "chaos": 900,
    "live_fanout": 900,
    "chain_scale": 480,
    "create_tasks": 480,
    "webhook_starvation": 480,
}


def benchmarks() -> list[str]:
    """The modules that run as scripts (helpers such as chain_support have no __main__ guard)."""
    return sorted(
        p.stem
        for p in BENCH_DIR.glob("*.py")
        if p.stem not in SKIP and 'if __name__ == "__main__":' in p.read_text(errors="replace")
    )


def main(argv: list[str]) -> int:
    names = argv or benchmarks()
    failed: list[str] = []
    for name in names:
        print(f"\n######## bench.{name}", flush=True)
        started = time.monotonic()
        try:
            # its own session: on timeout the benchmark gets SIGTERM and cleans up its processes and database
            proc = subprocess.Popen([sys.executable, "-m", f"bench.{name}"], cwd=BENCH_DIR.parent)
            code = proc.wait(timeout=LONGER_TIMEOUT_S.get(name, TIMEOUT_S))
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            code = -1
        print(f"######## bench.{name}: exit {code} after {time.monotonic() - started:.0f} s", flush=True)
        if code != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

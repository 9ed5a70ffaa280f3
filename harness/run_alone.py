"""Every test file passes alone: each in a pytest run of its own, as a developer runs `pytest FILE`.

    python -m harness.run_alone                 every file under tests/ (`make test-each`, for the record)
    python -m harness.run_alone --sample 6      six files drawn at random (`.ci/run` after `make test`)
    python -m harness.run_alone tests/x.py ...  the files named

A file that passes only after another has run (a fixture that depends on what an earlier file set up) fails
here. `--jobs` runs that many files at once, each on Redis databases of its own (the suite's scheme in
tests/conftest.py) and its own ports (harness/ports.py gives a process outside pytest-xdist a slice of its
own). A failed file's log is printed; every log is kept under var/run-alone/.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from queue import Queue

from harness.ports import PORT_SLOT

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "var" / "run-alone"
REDIS_BASE = "redis://127.0.0.1:6379"


@dataclass(frozen=True)
class Outcome:
    file: str
    code: int
    seconds: float
    log: Path

    @property
    def passed(self) -> bool:
        return self.code == 0


def test_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py"))


def run_file(file: str, lane: int, timeout: float) -> Outcome:
    """`pytest FILE` in a process group of its own, on lane `lane`'s Redis databases."""
    log = LOGS / (file.replace("/", "__") + ".log")
    env = {
        **os.environ,
        "PROOFLOOP_TEST_REDIS_URL": f"{REDIS_BASE}/{15 - 2 * lane}",
        PORT_SLOT: str(lane),
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    started = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", file, "-q"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            out.write(f"\nkilled after {timeout:g} s\n".encode())
            code = -signal.SIGKILL
    return Outcome(file, code, time.monotonic() - started, log)


def run_all(files: list[str], jobs: int, timeout: float) -> list[Outcome]:
    lanes: Queue[int] = Queue()
    for lane in range(jobs):
        lanes.put(lane)

    def in_a_lane(file: str) -> Outcome:
        lane = lanes.get()
        try:
            outcome = run_file(file, lane, timeout)
        finally:
            lanes.put(lane)
        verdict = "passed" if outcome.passed else f"FAILED ({outcome.code})"
        print(f"{verdict:>12} {outcome.seconds:6.1f} s  {file}", flush=True)
        if not outcome.passed:
            print(outcome.log.read_text(errors="replace")[-6000:], flush=True)
        return outcome

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(in_a_lane, files))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="test files (default: every file under tests/)")
    parser.add_argument("--sample", type=int, help="run this many files drawn at random")
    parser.add_argument("--seed", type=int, help="the draw's seed (printed, to repeat a sample)")
    parser.add_argument("--jobs", type=int, default=2, help="files at once (at most 6)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a file may take")
    args = parser.parse_args(argv)
    if not 1 <= args.jobs <= 6:
        parser.error("--jobs takes 1 to 6 (each lane takes two Redis databases from 15 down)")
    files = args.files or test_files()
    if args.sample is not None:
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
        files = sorted(random.Random(seed).sample(files, min(args.sample, len(files))))
        print(f"{len(files)} files drawn with --seed {seed}", flush=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    outcomes = run_all(files, args.jobs, args.timeout)
    failed = [o.file for o in outcomes if not o.passed]
    print(
        f"each file alone: {len(outcomes) - len(failed)} of {len(outcomes)} files green "
        f"in {time.monotonic() - started:.0f} s (logs in {LOGS.relative_to(ROOT)})"
    )
    for file in failed:
        print(f"  not green alone: {file}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

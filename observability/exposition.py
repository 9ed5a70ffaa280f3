"""Exposition: the text /metrics answers with, in one process or aggregated over several.

Several processes (uvicorn --workers N, dramatiq's worker processes) share metrics through
prometheus_client's multiprocess mode: each process writes its values to files in
PROMETHEUS_MULTIPROC_DIR and the exposition sums them. The commands that start such process groups
give each group a private, empty directory (never the shared data dir: replicas on a shared volume
would collide on pids) and remove it when the group stops.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess

from actors.health import readiness

log = logging.getLogger("proofloop.metrics")

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV)


def registry_for(directory: str | None) -> CollectorRegistry:
    """The default registry in a lone process; with a directory, a registry summing every process's files."""
    if directory is None:
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    return registry


def render_latest() -> bytes:
    return generate_latest(registry_for(multiprocess_dir()))


@contextmanager
def private_multiprocess_dir(role: str) -> Iterator[str]:
    """An empty directory for one process group's metric files, removed when the group stops."""
    _remove_dirs_of_dead_owners()
    directory = tempfile.mkdtemp(prefix=f"proofloop-{role}-metrics-{os.getpid()}-")
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _remove_dirs_of_dead_owners() -> None:
    # a killed (kill -9) command never ran its cleanup: its directory names its pid
    for path in Path(tempfile.gettempdir()).glob("proofloop-*-metrics-*-*"):
        owner = path.name.split("-")[3]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def forget_this_process() -> None:
    """Drop this process's live gauges (open subscriptions, backlog) when it stops; counters stay summed."""
    directory = multiprocess_dir()
    if directory is not None:
        multiprocess.mark_process_dead(os.getpid(), directory)  # type: ignore[no-untyped-call]


def serve_worker_metrics(host: str, port: int, directory: str) -> bool:
    """Answer GET /metrics (the worker processes' files summed), /healthz and /readyz (their health
    reports) on host:port from a daemon thread.

    Port 0 disables it. A port already taken is logged, not fatal: the chain matters more than its metrics.
    """
    if port == 0:
        return False
    registry = registry_for(directory)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._answer(200, CONTENT_TYPE, generate_latest(registry))
            elif path == "/healthz":
                self._answer(200, "application/json", b'{"status": "ok"}')
            elif path == "/readyz":
                ready, body = readiness(directory)
                self._answer(200 if ready else 503, "application/json", json.dumps(body).encode())
            else:
                self._answer(404, "text/plain", b"not found")

        def _answer(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # scrapes and probes every few seconds are not news

    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:
        log.warning("worker metrics not served on %s:%d: %s", host, port, exc)
        return False
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="worker-metrics", daemon=True).start()
    return True

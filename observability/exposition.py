"""Exposition: the text /metrics answers with, in one process or aggregated over several.

Several processes (uvicorn --workers N, dramatiq's worker processes) share metrics through
prometheus_client's multiprocess mode: each process writes its values to files in
PROMETHEUS_MULTIPROC_DIR and the exposition sums them. The commands that start such process groups
give each group a private, empty directory (never the shared data dir: replicas on a shared volume
would collide on pids) and remove it when the group stops.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.exposition import start_http_server

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
    """Answer GET /metrics on host:port from a daemon thread, aggregating the worker processes' files.

    Port 0 disables it. A port already taken is logged, not fatal: the chain matters more than its metrics.
    """
    if port == 0:
        return False
    try:
        start_http_server(port, addr=host, registry=registry_for(directory))
    except OSError as exc:
        log.warning("worker metrics not served on %s:%d: %s", host, port, exc)
        return False
    return True

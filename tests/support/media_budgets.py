"""The API's RSS budget while hostile media arrive, and reading a server's RSS."""

from __future__ import annotations

import psutil

from harness.proofloop import (
    ServerProcess,
)

# The API's resident memory while photo bombs arrive: it idles near 150 MB; one decoded bomb is ~650 MB.
RSS_BUDGET_MB = 400


def api_rss_mb(server: ServerProcess) -> float:
    assert server.proc is not None
    process = psutil.Process(server.proc.pid)
    return sum(p.memory_info().rss for p in (process, *process.children(recursive=True))) / 2**20

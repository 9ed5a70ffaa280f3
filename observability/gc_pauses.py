"""Time every cyclic garbage collection of this process (`gc.callbacks`): each one stops the event loop.

A full collection walks every object the collector tracks, so its pause grows with what long-lived
state (open subscriptions above all) keeps; `proofloop_gc_pause_seconds` and
`proofloop_gc_longest_pause_seconds` show it, and `bench.live_fanout` reads them.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from observability.metrics import GC_LONGEST_PAUSE, GC_PAUSES


class PauseProbe:
    def __init__(self) -> None:
        self._started = 0.0
        self.longest = [0.0, 0.0, 0.0]

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        pause = time.perf_counter() - self._started
        generation = int(info["generation"])
        GC_PAUSES.labels(generation=str(generation)).observe(pause)
        if pause > self.longest[generation]:
            self.longest[generation] = pause
            GC_LONGEST_PAUSE.labels(generation=str(generation)).set(pause)


@contextmanager
def timed_collections() -> Iterator[PauseProbe]:
    probe = PauseProbe()
    gc.callbacks.append(probe)
    try:
        yield probe
    finally:
        gc.callbacks.remove(probe)

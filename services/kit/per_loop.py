"""State that belongs to one event loop: the gatherers and senders that hold futures, events and tasks.

Those objects are bound to the loop that made them, and a process may run several loops over its life or at
once: a worker thread Dramatiq restarts runs a new one, and a test process runs its own beside the
services it drives. So each coordinator is made per running loop, on first use, and dropped once its loop
has closed; nothing made on one loop is ever awaited on another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerLoop(Generic[T]):
    """One `T` per running event loop, made by `make` the first time that loop asks."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        # keyed by the loop itself, not weakly: what a coordinator holds (its tasks, a used Event) refers
        # to its loop, so a weak key would never die; closed loops are dropped when a new one arrives
        self._made: dict[asyncio.AbstractEventLoop, T] = {}

    def get(self) -> T:
        """The running loop's instance (RuntimeError outside a running loop)."""
        loop = asyncio.get_running_loop()
        made = self._made.get(loop)
        if made is None:
            self._made = {known: kept for known, kept in self._made.items() if not known.is_closed()}
            made = self._made[loop] = self._make()
        return made

"""Keep long-lived subscription state out of the garbage collector's full passes (off by default).

Start-up's objects are frozen once (`freeze_start_up`, on with PROOFLOOP_GC_FREEZE). The freeze and
thaw of subscriptions below is off unless PROOFLOOP_GC_FREEZE_AFTER_SUBSCRIPTIONS > 0: it was needed
while a subscription ran inside Strawberry's per-operation machinery for its whole life (~125 objects
the collector tracks each, PROOFLOOP_SUBSCRIPTION_PATH=extensions); a task per subscription without
those hooks (`lean`) keeps about half of that, and the default (`socket`, web/live_sender.py) a handful,
see docs/performance.md. With 10,000 such
subscriptions on one API process a full collection walked ~1.9M objects and stopped the event loop
for 0.5-0.9 s (measured with bench/live_fanout.py), which every live delivery then waits behind.

So, once a burst of new subscriptions has settled, the heap is frozen (`gc.freeze`: every object moves to
the permanent generation, which collections skip). What a frozen object that later ends leaves behind is
freed by reference counting as usual; only garbage in reference cycles waits for the next thaw, which
unfreezes, collects everything in one full pass (the one pause left) and freezes again, every
PROOFLOOP_GC_THAW_SECONDS. Start-up's objects are frozen once at start (app.py), as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from observability.metrics import GC_FROZEN_OBJECTS

log = logging.getLogger("proofloop.heap")

TICK_SECONDS = 1.0


@dataclass
class FreezePolicy:
    """When to freeze and thaw, from the count of subscriptions registered so far (pure: tested alone)."""

    after_new: int  # freeze once this many subscriptions were registered since the last freeze ...
    thaw_seconds: float  # ... and thaw (one full collection) this often while anything is frozen
    frozen_at_total: int = 0
    last_total: int = 0
    frozen_since: float | None = None

    def decide(self, total: int, now: float) -> str | None:
        """'freeze', 'thaw' or None for this tick; `total` only grows."""
        settled = total == self.last_total  # no new subscription since the last tick: the burst is over
        self.last_total = total
        if self.frozen_since is not None and now - self.frozen_since >= self.thaw_seconds:
            self.frozen_since = now
            self.frozen_at_total = total
            return "thaw"
        if settled and total - self.frozen_at_total >= self.after_new:
            self.frozen_at_total = total
            if self.frozen_since is None:
                self.frozen_since = now
            return "freeze"
        return None


def freeze_start_up() -> None:
    """Start-up's objects (modules, the schema, pools) live as long as the process: frozen once."""
    gc.collect()
    gc.freeze()
    GC_FROZEN_OBJECTS.set(gc.get_freeze_count())


def freeze() -> None:
    gc.collect(1)  # the young generations' garbage is not frozen with the rest (a cheap pass)
    gc.freeze()
    GC_FROZEN_OBJECTS.set(gc.get_freeze_count())


def thaw() -> None:
    began = time.perf_counter()
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    GC_FROZEN_OBJECTS.set(gc.get_freeze_count())
    log.info("heap thawed and collected in %.0f ms", (time.perf_counter() - began) * 1000)


async def keep_frozen(registered: Callable[[], int], policy: FreezePolicy) -> None:
    """Run for the process's life: freeze after bursts of subscriptions, thaw on the policy's clock."""
    while True:
        await asyncio.sleep(TICK_SECONDS)
        action = policy.decide(registered(), time.monotonic())
        if action == "freeze":
            freeze()
        elif action == "thaw":
            thaw()


@contextlib.asynccontextmanager
async def frozen_subscriptions(
    registered: Callable[[], int], after_new: int, thaw_seconds: float
) -> AsyncIterator[None]:
    task = asyncio.create_task(keep_frozen(registered, FreezePolicy(after_new, thaw_seconds)), name="heap")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

"""Links delivered together, fired together: a batch message, or the links a process receives while it
is busy firing others, go as one set (which may gather more rows due with them); a lone link on an idle
process takes the row path at once, so the idle case costs nothing more. What the set leaves (or all of
it, when the set fails) goes row by row, where one failing never stops the others."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from observability.outages import report_failure

log = logging.getLogger("proofloop.sets")

LinkArgs = tuple[str, int]  # (row id, link number), as a link message carries them
FireSet = Callable[[list[LinkArgs]], Awaitable[list[LinkArgs]]]  # returns what it leaves to the row path
FireOne = Callable[[str, int], Awaitable[object]]
# Links that may fire alone at once before the next ones gather (see SetGatherer._idle).
ALONE_IN_FLIGHT = 2
Waiter = tuple[list[LinkArgs], "asyncio.Future[list[LinkArgs]]"]


class SetGatherer:
    """Per event loop: at most one set at a time, which takes every link delivered while work ran."""

    def __init__(self, fire_set: FireSet, fire_one: FireOne) -> None:
        self._fire_set = fire_set
        self._fire_one = fire_one
        self._waiting: list[Waiter] = []
        self._rows_firing = 0
        self._task: asyncio.Task[None] | None = None

    async def deliver(self, links: list[LinkArgs]) -> None:
        """Fire the links (set path, then row by row); raises the first row failure once all have run,
        so the message counts as failed (its row still owes the work: the pump resends it)."""
        leftover = await self._take(links)
        self._rows_firing += 1
        try:
            results = await asyncio.gather(
                *(self._fire_one(i, n) for i, n in leftover), return_exceptions=True
            )
        finally:
            self._rows_firing -= 1
        failures = [r for r in results if isinstance(r, BaseException)]
        for (row_id, _), result in zip(leftover, results, strict=True):
            if isinstance(result, BaseException) and result is not failures[0]:
                report_failure(log, "fire", result, "fire of %s failed", row_id)
        if failures:
            raise failures[0]

    def _idle(self) -> bool:
        """No set running or waiting, and fewer than ALONE_IN_FLIGHT links firing alone: reminders a
        moment apart stay on the cheap path, while a herd's third link starts gathering the rest."""
        set_running = self._task is not None and not self._task.done()
        return not self._waiting and not set_running and self._rows_firing < ALONE_IN_FLIGHT

    async def _take(self, links: list[LinkArgs]) -> list[LinkArgs]:
        loop = asyncio.get_running_loop()
        if len(links) == 1 and self._idle():
            return links  # the lone link on an idle process: its own cheap path
        waiter: asyncio.Future[list[LinkArgs]] = loop.create_future()
        self._waiting.append((links, waiter))
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run())  # held: a running task must not be collected
        return await waiter

    async def _run(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, []
            links = list(dict.fromkeys(link for named, _ in batch for link in named))
            try:
                leftover = await self._fire_set(links)
            except Exception as exc:
                # the reads failed (the database is away), not a row: the messages fail, the pump resends
                for _, waiter in batch:
                    if not waiter.done():
                        waiter.set_exception(exc)
                continue
            hand_back(batch, leftover)


def hand_back(batch: list[Waiter], leftover: list[LinkArgs]) -> None:
    """Each waiter gets the leftovers it named; rows nobody named (gathered) go to the first waiter."""
    remaining = dict(leftover)
    shares = [[(i, remaining.pop(i)) for i, _ in named if i in remaining] for named, _ in batch]
    if shares:
        shares[0].extend(remaining.items())
    for (_, waiter), share in zip(batch, shares, strict=True):
        if not waiter.done():
            waiter.set_result(share)

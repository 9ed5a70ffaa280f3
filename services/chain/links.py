"""Chain links as Dramatiq messages: built by instance, grouped by fire_at, sent after commit in batches.

A link committed by one transaction waits here a moment for links other transactions of this process
commit meanwhile (a burst of createTask calls), so links due at the same instant leave as a few
`chain.fire_batch` messages instead of one message each. A link due soon leaves at once.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from observability.metrics import count_links_sent
from observability.outages import report_failure
from services.kit import Outgoing, PerLoop, on_commit, send
from services.timers import LINK_BATCH as LINK_BATCH
from services.timers import Link as Link
from services.timers import batched_messages

log = logging.getLogger("proofloop.chain")

FIRE_ACTOR = "chain.fire"
FIRE_BATCH_ACTOR = "chain.fire_batch"
# How long a committed link may wait for others to share its message, and how near its fire_at must
# be for it to leave at once instead (the worker needs it in Redis before then).
GATHER_SECONDS = 1.0
SEND_AT_ONCE_WITHIN_SECONDS = 5.0


def batched_link_messages(rows: list[Link]) -> list[Outgoing]:
    """One message per link, except that links with the same fire_at share messages of LINK_BATCH."""
    return batched_messages(rows, one=FIRE_ACTOR, many=FIRE_BATCH_ACTOR, per_message=LINK_BATCH)


async def send_links(rows: list[Link]) -> None:
    await send(batched_link_messages(rows))


def send_links_after_commit(links: list[Link]) -> None:
    """Hand the links to this process's sender once the current transaction commits (a rollback drops
    them). A link lost before it leaves (the process dies) is the pump's to resend: its row says so."""
    if not links:
        return
    count_links_sent("chain", len(links))

    async def hand_over() -> None:
        _senders.get().add(links)

    on_commit(hand_over)


class _LinkSender:
    """Per event loop: holds committed links briefly and sends them grouped (see the module docstring)."""

    def __init__(self) -> None:
        self._held: list[Link] = []
        self._send_by: float | None = None  # loop time at which the held links must leave
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def add(self, links: list[Link]) -> None:
        loop = asyncio.get_running_loop()
        self._held.extend(links)
        now = datetime.now(UTC)
        soonest = min((fire_at - now).total_seconds() for _, _, fire_at in links)
        wait = 0.0 if soonest <= SEND_AT_ONCE_WITHIN_SECONDS else GATHER_SECONDS
        send_by = loop.time() + wait
        if self._send_by is None or send_by < self._send_by:
            self._send_by = send_by
            self._wakeup.set()
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run())  # held: a running task must not be collected

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._held:
            assert self._send_by is not None
            delay = self._send_by - loop.time()
            if delay > 0:
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), timeout=delay)
                    continue  # an earlier deadline arrived: wait again, for it
                except TimeoutError:
                    pass
            links, self._held, self._send_by = self._held, [], None
            try:
                await send_links(links)
            except Exception as exc:
                # the rows still record what is owed: the pump resends what never left
                report_failure(
                    log,
                    "link send",
                    exc,
                    "sending %d chain links failed; the pump will resend them",
                    len(links),
                )


_senders = PerLoop(_LinkSender)

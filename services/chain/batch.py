"""Set-based settlement: the due links a worker receives, and every row due in the same seconds, settled
in one transaction per chunk (docs/architecture.md, "Settling in sets").

One statement claims and settles (each row by its own compare-and-set, rows another transaction holds
skipped: one still owed then is the pump's to resend, as a lost link), one more writes the events, the
next instances and the tasks' counters; links and announcements leave after commit. What the set path
does not take (a lone link, early links, reviews at their deadline) goes to chain.fire, row by row; so
does every row of a chunk that fails, so a bad row never blocks the others.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from uuid import uuid4

from models import InstanceStatus
from observability.metrics import observe_settlements
from observability.outages import report_failure
from rules.recurrence import Schedule
from services.chain.catch_up import excused_times
from services.chain.chain import OPEN_STATUSES, ChainTiming, FireOutcome, fire
from services.chain.links import send_links_after_commit
from services.chain.planning import Ask, next_steps
from services.chain.settle_reads import LinkedRow, read_due_in_seconds, read_named, whole_second
from services.chain.settle_sql import (
    ClaimedRow,
    ExcusedRow,
    PlannedRow,
    claim_and_settle,
    write_excused,
    write_settlements,
)
from services.feed import announce_committed_events
from services.kit import PerLoop, db_now, on_commit, write_transaction
from services.reminders import Occurrence, offsets_from, plan_reminders_of
from services.schedules import DueTimes, prefetch_many, window_for
from services.timers import LinkArgs, Waiter, hand_back

log = logging.getLogger("proofloop.chain")

# Rows settled per transaction: a burst costs a few transactions, and one holds its locks briefly.
SETTLE_CHUNK = 1000
CHUNKS_IN_FLIGHT = 2


@dataclass
class Chunk:
    """What one pass of the set path did with its links."""

    settled: int = 0
    leftover: list[LinkArgs] = field(default_factory=list)  # for chain.fire, row by row
    contended: bool = False  # it claimed a low share of its rows: another process drains them


async def settle_chunk(
    links: list[LinkArgs],
    seconds: list[datetime],
    timing: ChainTiming,
    busy: set[str] | None = None,
    more_due: Callable[[list[datetime]], None] | None = None,
    reading: asyncio.Lock | None = None,
    with_linked: bool = True,
) -> Chunk:
    """Settle the due PENDING rows the links name, and up to SETTLE_CHUNK rows due in the same whole
    seconds (and in `seconds`), in one transaction. `busy`: rows another chunk of this process is
    settling (left to it), to which this chunk adds its own while it runs; `more_due` hears at once
    of seconds with more due rows than this chunk takes, so another chunk may start on them. Without
    `with_linked` (another process settles these seconds too) it gathers only rows no link was sent for:
    the others are left to the process each one's message reaches, so processes do not read each other's."""
    busy = set() if busy is None else busy
    reading = asyncio.Lock() if reading is None else reading
    link_no = dict(links)
    async with reading:  # chunks of this process read one at a time, so their rows never overlap
        named = await read_named(list(link_no)) if links else []
        now = await db_now()
        due = [r for r in named if _due(r, now) and r.instance_id not in busy]
        chunk = Chunk(leftover=[(r.instance_id, link_no[r.instance_id]) for r in named if _row_path(r, now)])
        wanted = sorted({whole_second(r.fire_at) for r in due if r.fire_at} | set(seconds))
        gathered = []
        if wanted:
            gathered = await read_due_in_seconds(wanted, now, SETTLE_CHUNK, busy, with_linked=with_linked)
        rows = list(
            {
                r.instance_id: r
                for r in [*due, *gathered]
                if r.instance_id not in busy and not r.change_due(now) and not r.takes_row_path(now)
            }.values()
        )
        if not rows:
            return chunk
        mine = {r.instance_id for r in rows}
        busy |= mine
    if len(gathered) >= SETTLE_CHUNK and more_due is not None:
        more_due(wanted)
    try:
        claimed = await _settle_rows(rows, timing)
    except Exception as exc:
        report_failure(
            log,
            "chain set",
            exc,
            "settling %d instances as a set failed; settling them one by one",
            len(rows),
        )
        chunk.leftover += [(r.instance_id, link_no.get(r.instance_id, 0)) for r in rows]
        return chunk
    finally:
        busy -= mine
    chunk.settled = len(claimed)
    # a row the claim skipped is another transaction's now (an edit, or another process settling it):
    # waiting for each would stall this process, so one still owed is the pump's to resend
    chunk.contended = 2 * len(claimed) < len(rows)
    return chunk


def _due(row: LinkedRow, now: datetime) -> bool:
    return row.status is InstanceStatus.PENDING and row.fire_at is not None and row.fire_at <= now


def _row_path(row: LinkedRow, now: datetime) -> bool:
    """A review at its deadline, an early link (which resends the remainder), a task whose waiting change
    has come due (applied before the settlement), or one with a planned break ahead (planned around it):
    chain.fire's work."""
    if row.fire_at is None or row.status not in OPEN_STATUSES:
        return False  # nothing owed: a duplicate or a late link
    return (
        row.status is InstanceStatus.PENDING_REVIEW
        or row.fire_at > now
        or row.change_due(now)
        or row.takes_row_path(now)
    )


async def _settle_rows(rows: list[LinkedRow], timing: ChainTiming) -> set[str]:
    """The transaction: claim-and-settle, then events, next instances and tasks; the claimed ids."""
    due_times = await prefetch_many([(r.schedule, r.due_at) for r in rows], timing.recurrence)
    async with write_transaction():
        now = await db_now()
        claimed = await claim_and_settle([r.instance_id for r in rows], now)
        missed = [c for c in claimed if c.status is InstanceStatus.MISSED]
        planned, ended, excused = await _plan_next(missed, now, timing, due_times)
        if missed or ended:
            await write_settlements(now, missed, ended, planned)
            await write_excused(now, excused)
            await _plan_reminders(missed, planned, now, timing)
            on_commit(announce_committed_events)
        send_links_after_commit([(p.instance_id, 1, p.closes_at) for p in planned if p.linked])
    fire_at = {r.instance_id: r.fire_at for r in rows}
    observe_settlements([(c.status.value, fire_at.get(c.instance_id)) for c in claimed], now)
    if claimed:
        log.info(
            "settled %d instances as a set: %d MISSED, %d stale CANCELED, %d EXCUSED passed over; "
            "planned %d, ended %d tasks",
            len(claimed),
            len(missed),
            len(claimed) - len(missed),
            len(excused),
            len(planned),
            len(ended),
        )
    return {c.instance_id for c in claimed}


async def _plan_reminders(
    missed: list[ClaimedRow], planned: list[PlannedRow], now: datetime, timing: ChainTiming
) -> None:
    """chain.plan_next_instance's reminders, for every planned instance whose task has some (one insert)."""
    offsets = {row.task_id: offsets_from(row.reminders) for row in missed if row.reminders}
    wanted = [
        (Occurrence(p.instance_id, p.opens_at, p.due_at), offsets[p.task_id])
        for p in planned
        if offsets.get(p.task_id)
    ]
    if wanted:
        await plan_reminders_of(wanted, now=now, link_horizon_seconds=timing.link_horizon_seconds)


async def _plan_next(
    missed: list[ClaimedRow],
    now: datetime,
    timing: ChainTiming,
    due_times: dict[tuple[Schedule, datetime], DueTimes],
) -> tuple[list[PlannedRow], list[str], list[ExcusedRow]]:
    """services/chain/planning.py's answer for each missed row (from the due times expanded before the
    locks), as rows for the set statements: the next instances, the tasks that END, and the occurrences a
    late settlement passed over, EXCUSED (chain.plan_after_settlement)."""
    asks = [
        Ask(
            r.task_id, r.schedule, r.scheduled_due_at or r.due_at, due_times.get((r.schedule, r.due_at)), True
        )
        for r in missed  # a task with breaks ahead takes the row path: none here
    ]
    steps = await next_steps(asks, now, timing.recurrence, timing.catch_up_limit)
    excused_at = await excused_times(steps, timing.catch_up_limit)
    planned: list[PlannedRow] = []
    ended: list[str] = []
    excused: list[ExcusedRow] = []
    for row in missed:
        seq = row.last_seq
        for due_at in excused_at.get(row.task_id, ()):
            seq += 1
            opens_at, closes_at = window_for(row.schedule, due_at)
            excused.append(
                ExcusedRow(
                    str(uuid4()),
                    row.task_id,
                    seq,
                    row.chain_version,
                    opens_at,
                    due_at,
                    closes_at,
                    row.owner_id,
                    row.title,
                )
            )
        next_due = steps[row.task_id].next_due
        if next_due is None:
            ended.append(row.task_id)
            continue
        opens_at, closes_at = window_for(row.schedule, next_due)
        planned.append(
            PlannedRow(
                instance_id=str(uuid4()),
                task_id=row.task_id,
                seq=seq + 1,
                chain_version=row.chain_version,
                opens_at=opens_at,
                due_at=next_due,
                closes_at=closes_at,
                linked=(closes_at - now).total_seconds() <= timing.link_horizon_seconds,
            )
        )
    return planned, ended, excused


async def settle_links(links: list[LinkArgs], timing: ChainTiming) -> list[LinkArgs]:
    """Deliver links (chain.fire, chain.fire_batch): the set path first, shared with every link this
    process received meanwhile; what it leaves, row by row, where one failing never stops the others
    (its row still owes work, so the pump resends it). Raises the first failure once all have run,
    so the message counts as failed.

    Returns the links left undelivered because their task's pending change came due first: the caller
    applies those changes and delivers these links again (actors/chain.py)."""
    leftover = await _gatherers.get().settle(links, timing)
    results: list[FireOutcome | BaseException] = await asyncio.gather(
        *(fire(instance_id, link_no, timing) for instance_id, link_no in leftover), return_exceptions=True
    )
    failures = [r for r in results if isinstance(r, BaseException)]
    for (instance_id, _), result in zip(leftover, results, strict=True):
        if isinstance(result, BaseException) and result is not failures[0]:
            report_failure(log, "chain fire", result, "fire failed", extra={"instance_id": instance_id})
    if failures:
        raise failures[0]
    return [link for link, result in zip(leftover, results, strict=True) if result is FireOutcome.CHANGE_DUE]


class _Gatherer:
    """Per event loop: up to CHUNKS_IN_FLIGHT chunks on disjoint rows, each taking every link delivered
    while the others ran (one chunk's statements run while another's Python does).

    Chunks gather every due row of their seconds until one finds most of its rows taken by another
    process; from then until this burst is over (nothing waiting or running), they gather only rows no
    link was sent for, so two processes split a herd by its messages instead of reading it twice."""

    def __init__(self) -> None:
        self._waiting: list[Waiter] = []
        self._draining: list[datetime] = []
        self._busy: set[str] = set()
        self._shared = False  # another process settles the seconds of this burst too
        self._reading = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def settle(self, links: list[LinkArgs], timing: ChainTiming) -> list[LinkArgs]:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[list[LinkArgs]] = loop.create_future()
        self._waiting.append((links, waiter))
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run(timing))  # held: a running task must not be collected
        return await waiter

    async def _run(self, timing: ChainTiming) -> None:
        running: set[asyncio.Task[None]] = set()
        while self._waiting or self._draining or running:
            while len(running) < CHUNKS_IN_FLIGHT and (self._waiting or self._draining):
                batch, self._waiting = self._waiting, []
                seconds, self._draining = self._draining, []
                alone = not running and not seconds
                running.add(asyncio.create_task(self._chunk(batch, seconds, timing, alone)))
            self._wake.clear()
            woken = asyncio.create_task(self._wake.wait())
            done, _ = await asyncio.wait({*running, woken}, return_when=asyncio.FIRST_COMPLETED)
            woken.cancel()
            running -= done
        self._shared = False  # the burst is over: the next one starts gathering everything again

    async def _chunk(
        self, batch: list[Waiter], seconds: list[datetime], timing: ChainTiming, alone: bool
    ) -> None:
        links = list(dict.fromkeys(link for named, _ in batch for link in named))
        if alone and len(links) == 1:  # the idle case: one link, nothing else due here; chain.fire's
            hand_back(batch, links)
            self._wake.set()
            return
        try:
            chunk = await settle_chunk(
                links, seconds, timing, self._busy, self._more_due, self._reading, not self._shared
            )
        except Exception as exc:
            # the reads failed (the database is away), not a row: the messages fail, the pump resends
            for _, waiter in batch:
                if not waiter.done():
                    waiter.set_exception(exc)
            self._wake.set()
            return
        if chunk.contended:  # another process settles these seconds: leave it the rows its links name
            self._draining, self._shared = [], True
        hand_back(batch, chunk.leftover)
        self._wake.set()

    def _more_due(self, seconds: list[datetime]) -> None:
        self._draining = sorted(set(self._draining) | set(seconds))
        self._wake.set()


_gatherers = PerLoop(_Gatherer)

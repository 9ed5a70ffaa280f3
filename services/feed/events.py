"""The event outbox: rows written with each state change, positioned and announced after commit."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextvars import ContextVar
from datetime import datetime
from typing import Any, Protocol

from models import Event, EventType, Task, TaskInstance, Verification
from observability.outages import report_failure
from realtime import notices
from services.kit import PerLoop, connection, is_sqlite, on_commit, write_transaction

log = logging.getLogger("proofloop.events")

# Any constant shared by every process: serializes the step that gives positions.
_POSITION_LOCK_KEY = 7_311_001

# Positions go on from the counter, which only grows: a position (and the event id made from it) is
# never given twice, even after the newest events were deleted with their account.
_ASSIGN_SQL = """
UPDATE events SET position = numbered.base + numbered.rn
FROM (
    SELECT e.id AS id, ROW_NUMBER() OVER (ORDER BY e.id) AS rn,
           (SELECT position FROM event_position_counter WHERE id = 1) AS base
    FROM events e WHERE e.position IS NULL
) AS numbered
WHERE events.id = numbered.id
RETURNING events.user_id AS user_id, events.position AS position
"""
_ADVANCE_SQL = "UPDATE event_position_counter SET position = position + {count} WHERE id = 1"


class Snapshot(Protocol):
    """What a set's event row keeps of its instance as it was: whose, which task and instance, the title
    and the due time (the status is the event's own)."""

    @property
    def owner_id(self) -> str: ...
    @property
    def task_id(self) -> str: ...
    @property
    def instance_id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def due_at(self) -> datetime: ...


def snapshot_columns(rows: Sequence[Snapshot]) -> list[list[Any]]:
    """The snapshots as five arrays (owner, task, instance, title, due time), for unnest() on PostgreSQL."""
    return [
        [r.owner_id for r in rows],
        [r.task_id for r in rows],
        [r.instance_id for r in rows],
        [r.title for r in rows],
        [r.due_at for r in rows],
    ]


def snapshot_rows(now: datetime, rows: Sequence[Snapshot]) -> list[list[Any]]:
    """The snapshots as one parameter list per event (occurred at `now`), for SQLite's executemany."""
    return [[now, r.owner_id, r.task_id, r.instance_id, r.title, r.due_at] for r in rows]


async def record_event(
    type: EventType,
    task: Task,
    instance: TaskInstance,
    occurred_at: datetime,
    verification: Verification | None = None,
) -> Event:
    """Write an event row inside the caller's transaction; it is positioned and announced after commit."""
    event = await Event.create(
        type=type,
        occurred_at=occurred_at,
        user_id=task.owner_id,
        task=task,
        instance=instance,
        verification=verification,
        task_title=task.title,
        instance_status=instance.status,
        due_at=instance.due_at,
    )
    on_commit(announce_committed_events)
    return event


async def record_events(
    type: EventType, tasks: dict[str, Task], instances: Sequence[TaskInstance], occurred_at: datetime
) -> None:
    """record_event for many instances in one insert (`tasks` by id: each instance's task)."""
    events = []
    for instance in instances:
        task = tasks[str(instance.task_id)]
        events.append(
            Event(
                type=type,
                occurred_at=occurred_at,
                user_id=task.owner_id,
                task_id=task.id,
                instance_id=instance.id,
                task_title=task.title,
                instance_status=instance.status,
                due_at=instance.due_at,
            )
        )
    await Event.bulk_create(events)
    on_commit(announce_committed_events)


async def assign_positions() -> list[tuple[str, int]]:
    """Give committed, unpositioned events their public ids, in commit order, in one serialized step."""
    async with write_transaction():
        conn = connection()
        if not is_sqlite():
            # SQLite has one writer, so BEGIN IMMEDIATE already serializes this step
            await conn.execute_query("SELECT pg_advisory_xact_lock($1)", [_POSITION_LOCK_KEY])
        rows: list[dict[str, Any]] = await conn.execute_query_dict(_ASSIGN_SQL)
        if rows:
            await conn.execute_query(_ADVANCE_SQL.format(count=len(rows)))
    return [(str(r["user_id"]), int(r["position"])) for r in rows]


# Whether a commit waits for its events' run. Requests do (a client that reads `events` right after its
# mutation must find the event there); a worker's messages need not, so their links return sooner: the
# worker's WorkerNotices middleware clears it for its threads (actors/notices.py).
commits_wait_for_positions: ContextVar[bool] = ContextVar("commits_wait_for_positions", default=True)


async def announce_committed_events() -> None:
    """Position what committed and wake the listeners; also the pump's backstop after a crash."""
    await _announcers.get().request(wait=commits_wait_for_positions.get())


class Announcer:
    """Positions committed events and wakes listeners, sharing runs between concurrent callers; one per
    event loop, as the chain's link sender is.

    One who arrives while a run is under way waits for the next run, which starts after its own commit
    and so covers its rows: a burst of settlements takes a few serialized position steps, not one each.
    """

    def __init__(self) -> None:
        self._next: asyncio.Future[None] | None = None
        self._running = False
        self._task: asyncio.Task[None] | None = None

    async def request(self, *, wait: bool) -> None:
        """Ask for a run that covers what has committed; with `wait`, return once it has."""
        loop = asyncio.get_running_loop()
        if self._next is None:
            self._next = loop.create_future()
        waiting = self._next
        if not self._running:
            self._running = True
            self._task = loop.create_task(self._run())  # held: a running task must not be collected
        if wait:
            await asyncio.shield(waiting)

    async def _run(self) -> None:
        try:
            while self._next is not None:
                current, self._next = self._next, None
                try:
                    await notices.publish_positions(await assign_positions())
                except Exception as exc:
                    # committed rows stay unpositioned until the next run or the pump's backstop
                    report_failure(
                        log,
                        "event positions",
                        exc,
                        "positioning committed events failed; the pump will retry",
                    )
                current.set_result(None)
        finally:
            self._running = False


_announcers = PerLoop(Announcer)

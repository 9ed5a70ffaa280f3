"""Delivering pending task changes at their effectiveAt, with the database as the timer.

As with chain links, tasks.pending_effective_at is the durable timer and a Dramatiq message
`chain.apply_pending_changes(task_ids)` only the delivery: the pump sends one for each change that enters
the link horizon (recording the effective_at it went for in pending_linked_for), and applies directly
any change overdue by PROOFLOOP_LINK_OVERDUE_SECONDS (a lost message). Applying is idempotent: under the
row lock, only a change still pending and due applies.

Changes due at the same instant travel in one message and apply as one set (one transaction, a fixed
number of statements: pending_changes.apply_pending_changes). Rows another transaction holds, and every
row of a set that fails, then apply one by one, where one failing never stops the others.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from functools import cache

from models import Task, TaskInstance
from observability.outages import report_failure
from services.chain import ChainTiming, lock_task
from services.kit import Outgoing, as_utc, connection, db_now, decode_id, is_sqlite, send, write_transaction
from services.tasks.pending_changes import (
    apply_pending_changes,
    eventual_due_times,
    is_due,
    lock_with_due_change,
)

log = logging.getLogger("proofloop.pending_changes")

APPLY_ACTOR = "chain.apply_pending_changes"
CLAIM_BATCH = 2000
# changes due at the same instant travel together and apply as one set
MESSAGE_BATCH = 500
OVERDUE_BATCH = 500

_CLAIM_SQL = """
UPDATE tasks SET pending_linked_for = pending_effective_at
WHERE id IN (
    SELECT id FROM tasks
    WHERE pending_effective_at IS NOT NULL AND pending_effective_at <= {horizon}
      AND (pending_linked_for IS NULL OR pending_linked_for <> pending_effective_at)
    ORDER BY pending_effective_at
    LIMIT {limit}{skip_locked}
)
RETURNING id, pending_effective_at
"""


@cache
def _claim_sql(sqlite: bool) -> str:
    return _CLAIM_SQL.format(
        horizon="?1" if sqlite else "$1",
        limit="?2" if sqlite else "$2",
        skip_locked="" if sqlite else " FOR UPDATE SKIP LOCKED",
    )


async def link_pending_changes(timing: ChainTiming) -> int:
    """Send a message for each change entering the link horizon that has none for its effective_at."""
    async with write_transaction():
        horizon = await db_now() + timedelta(seconds=timing.link_horizon_seconds)
        rows = await connection().execute_query_dict(_claim_sql(is_sqlite()), [horizon, CLAIM_BATCH])
    by_effective_at: dict[datetime, list[str]] = {}
    for row in rows:
        by_effective_at.setdefault(as_utc(row["pending_effective_at"]), []).append(str(row["id"]))
    await send(
        [
            Outgoing(APPLY_ACTOR, (task_ids[start : start + MESSAGE_BATCH],), eta=effective_at)
            for effective_at, task_ids in by_effective_at.items()
            for start in range(0, len(task_ids), MESSAGE_BATCH)
        ]
    )
    return len(rows)


async def apply_changes_of(task_ids: list[str], timing: ChainTiming) -> int:
    """A message's changes, as one set; what the set leaves (rows another transaction holds) or all of it
    (the set failed), one by one. A change that fails to apply is logged and left to the pump's backstop.
    Returns how many applied."""
    try:
        applied, left = await _apply_set(task_ids, timing)
    except Exception as exc:
        report_failure(
            log,
            "pending change",
            exc,
            "applying %d pending changes as a set failed; applying them one by one",
            len(task_ids),
        )
        applied, left = 0, task_ids
    results = await asyncio.gather(
        *(apply_change_of(task_id, timing) for task_id in left), return_exceptions=True
    )
    for task_id, result in zip(left, results, strict=True):
        if isinstance(result, BaseException):
            report_failure(
                log, "pending change", result, "pending change failed to apply", extra={"task_id": task_id}
            )
        else:
            applied += result
    return applied


async def _apply_set(task_ids: list[str], timing: ChainTiming) -> tuple[int, list[str]]:
    """(how many applied, the ids another transaction held): one transaction for every change due."""
    current = await Task.filter(id__in=task_ids, pending_effective_at__isnull=False)
    if not current:
        return 0, []
    due = await eventual_due_times(current, timing)
    sqlite = is_sqlite()
    async with write_transaction():
        # SQLite has one writer (BEGIN IMMEDIATE); PostgreSQL skips rows an edit or a proof holds, whose
        # own transaction applies a due change first (lock_with_due_change)
        locking = Task.filter(id__in=[task.id for task in current]).order_by("id")
        locked = await (
            locking.select_for_update() if sqlite else locking.select_for_update(skip_locked=True)
        )
        now = await db_now()
        ready = [task for task in locked if is_due(task, now)]
        await apply_pending_changes(ready, now, timing, due)
    held = {str(task.id) for task in current} - {str(task.id) for task in locked}
    return len(ready), sorted(held)


async def apply_changes_before_links(instance_ids: list[str], timing: ChainTiming) -> None:
    """The changes of the tasks whose links a fire left undelivered (chain.FireOutcome.CHANGE_DUE)."""
    task_ids = await TaskInstance.filter(id__in=instance_ids).values_list("task_id", flat=True)
    await apply_changes_of(sorted({str(task_id) for task_id in task_ids}), timing)


async def apply_overdue_changes(timing: ChainTiming, overdue_seconds: float) -> int:
    """The pump's backstop: apply changes whose message should have come by now, earliest first."""
    cutoff = await db_now() - timedelta(seconds=overdue_seconds)
    task_ids = (
        await Task.filter(pending_effective_at__lte=cutoff)
        .order_by("pending_effective_at")
        .limit(OVERDUE_BATCH)
        .values_list("id", flat=True)
    )
    return await apply_changes_of([str(task_id) for task_id in task_ids], timing) if task_ids else 0


async def apply_change_of(task_id: str, timing: ChainTiming) -> int:
    """One task's change if it is due, waiting for its row lock: 1 if it applied, else 0."""
    current = await Task.get_or_none(id=task_id)
    if current is None or not current.pending_change:
        return 0
    due = await eventual_due_times([current], timing)
    async with write_transaction():
        task = await lock_task(task_id)
        now = await db_now()
        if not is_due(task, now):
            return 0  # applied, canceled or moved meanwhile, or an early message: the pump covers it
        await apply_pending_changes([task], now, timing, due)
    return 1


async def apply_due_change_before_proof(instance_id: str, arrival: datetime, timing: ChainTiming) -> None:
    """Before a proof is read and judged (outside any lock): its task's change that was due when the
    proof arrived applies first, so the proof meets the new rules. One read when none waits."""
    key = decode_id(instance_id, "TaskInstance")
    if key is None:
        return
    task_ids = await TaskInstance.filter(id=key, task__pending_effective_at__lte=arrival).values_list(
        "task_id", flat=True
    )
    if task_ids:
        async with write_transaction():
            await lock_with_due_change(str(task_ids[0]), timing)

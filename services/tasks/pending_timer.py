"""When a pending task change applies: its message at effectiveAt, with the database as the timer.

As with chain links, tasks.pending_effective_at is the durable timer and a Dramatiq message
`chain.apply_pending_changes(task_ids)` only the delivery: the pump sends one for each change that enters
the link horizon (recording the effective_at it went for in pending_linked_for), and applies directly
any change overdue by PROOFLOOP_LINK_OVERDUE_SECONDS (a lost message). Applying is idempotent: under the
row lock, only a change still pending and due applies.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from functools import cache

from models import Task, TaskInstance
from observability.outages import report_failure
from services.chain import ChainTiming
from services.kit import Outgoing, as_utc, connection, db_now, decode_id, is_sqlite, send, write_transaction
from services.schedules import prefetch_due_times
from services.tasks.edits import before
from services.tasks.pending_changes import (
    apply_pending_change,
    eventual_schedule,
    is_due,
    lock_with_due_change,
    pending_of,
)

log = logging.getLogger("proofloop.pending_changes")

APPLY_ACTOR = "chain.apply_pending_changes"
CLAIM_BATCH = 500
# changes due at the same instant travel together, as chain links do (services.chain.chain.LINK_BATCH)
MESSAGE_BATCH = 50
OVERDUE_BATCH = 100

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


async def apply_changes_of(task_ids: list[str], timing: ChainTiming) -> None:
    """A message's changes, each in its own transaction; one failing never stops the others (the pump's
    backstop applies it)."""
    results = await asyncio.gather(
        *(apply_change_of(task_id, timing) for task_id in task_ids), return_exceptions=True
    )
    for task_id, result in zip(task_ids, results, strict=True):
        if isinstance(result, BaseException):
            report_failure(
                log, "pending change", result, "pending change failed to apply", extra={"task_id": task_id}
            )


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
    applied = 0
    for task_id in task_ids:
        try:
            applied += await apply_change_of(str(task_id), timing)
        except Exception as exc:
            report_failure(
                log, "pending change", exc, "pending change failed to apply", extra={"task_id": str(task_id)}
            )
    return applied


async def apply_change_of(task_id: str, timing: ChainTiming) -> int:
    """Apply the task's change if it is due (1), else nothing (0): a message or the pump's backstop."""
    current = await Task.get_or_none(id=task_id)
    if current is None or not current.pending_change:
        return 0
    due = None
    pending = pending_of(current)
    if pending.touches_schedule:
        # expanded before the row lock, as every planning step does
        schedule = eventual_schedule(current, pending)
        due = await prefetch_due_times(schedule, before(schedule.starts_at), timing.recurrence)
    async with write_transaction():
        task = await Task.filter(id=task_id).select_for_update().get()
        now = await db_now()
        if not is_due(task, now):
            return 0  # applied, canceled or moved meanwhile, or an early message: the pump covers it
        await apply_pending_change(task, now, timing, due)
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

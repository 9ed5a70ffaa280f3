"""Catch-up after an outage: the occurrences the service could not plan in time, recorded, never omitted.

The next instance is the first occurrence due after max(this one's due time, now). When the chain
settles late (the database or every worker was away, or the settlement itself waited), occurrences fell
between the two: no instance stood for them, so nobody could prove them. Each is written as an EXCUSED
instance (verdict reason SERVICE_OUTAGE) in the settling transaction: seen in the history and the feed,
never counted as missed, never in a streak or a progress count, never appealable, never charged.
The instance that stood open meanwhile is judged by its own window as usual (MISSED when no proof came:
its window was usable wherever the API was).

Only a settlement asks for this (NextPlan.excuse): re-planning after an edit, a pause or a break skips
the occurrences it passes over on purpose. Days inside a planned break stay break days.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from models import TaskBreak
from rules.breaks import BreakSpan, covering
from rules.recurrence import Schedule
from rules.recurrence_budget import RecurrenceBudget
from services.schedules import due_times_after

log = logging.getLogger("proofloop.chain")

# Occurrences expanded per step while looking for the end of an outage: most outages skip one or two.
_FIRST_STEP = 8


@dataclass(frozen=True)
class Overdue:
    """A task whose chain is settling late: occurrences due in (after, now] had no instance."""

    task_id: str
    schedule: Schedule
    after: datetime


async def excused_due_times(
    overdue: Sequence[Overdue], now: datetime, budget: RecurrenceBudget, limit: int
) -> dict[str, list[datetime]]:
    """The due times in (after, now] of each task, outside its planned breaks, at most `limit` per task
    (the earliest; the rest are logged). Tasks with none are left out. Runs only when a first due time
    already lies in the past, so a chain on time pays nothing."""
    skipped: dict[str, list[datetime]] = {}
    for task in overdue:
        times = await _due_between(task, now, budget, limit)
        if times:
            skipped[task.task_id] = times
    if not skipped:
        return {}
    spans = await _breaks_between(list(skipped), min(t.after for t in overdue if t.task_id in skipped), now)
    excused = {
        task_id: [at for at in times if covering(spans.get(task_id, ()), at) is None]
        for task_id, times in skipped.items()
    }
    return {task_id: times for task_id, times in excused.items() if times}


async def _due_between(task: Overdue, now: datetime, budget: RecurrenceBudget, limit: int) -> list[datetime]:
    count = _FIRST_STEP
    while True:
        found = await due_times_after(task.schedule, task.after, min(count, limit + 1), budget)
        times = [at for at in found.times if at <= now]
        if len(times) < len(found.times) or found.exhausted or len(found.times) > limit:
            break
        count *= 8
    if len(times) > limit:
        log.warning(
            "catch-up: %d occurrences inside the outage recorded, more not (PROOFLOOP_CATCH_UP_LIMIT)",
            limit,
            extra={"task_id": task.task_id},
        )
    return times[:limit]


async def _breaks_between(task_ids: list[str], since: datetime, now: datetime) -> dict[str, list[BreakSpan]]:
    """Each task's breaks overlapping (since, now] (one statement)."""
    spans: dict[str, list[BreakSpan]] = {}
    rows = TaskBreak.filter(task_id__in=task_ids, ends_at__gt=since, applies_from__lte=now)
    for row in await rows:
        spans.setdefault(str(row.task_id), []).append(BreakSpan(row.applies_from, row.ends_at))
    return spans

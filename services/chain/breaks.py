"""Planning around planned breaks: a due time inside a break of its task is skipped, as an outage's are.

Only tasks whose `break_until` lies ahead are read (one statement for a set of tasks), and the set path
leaves them to the row path (settle_reads.NO_CHANGE_DUE), so a chain without breaks pays nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from models import Task, TaskBreak
from rules.breaks import BreakSpan
from rules.recurrence_budget import RecurrenceBudget
from services.chain.planning import outside_breaks
from services.schedules import schedule_of


def has_breaks_ahead(task: Task, now: datetime) -> bool:
    return task.break_until is not None and task.break_until > now


async def break_spans(tasks: Sequence[Task], now: datetime) -> dict[str, list[BreakSpan]]:
    """The breaks still ahead of each task that has some, by task id (one statement, none without any)."""
    ids = [task.id for task in tasks if has_breaks_ahead(task, now)]
    if not ids:
        return {}
    spans: dict[str, list[BreakSpan]] = {}
    for row in await TaskBreak.filter(task_id__in=ids, ends_at__gt=now).order_by("applies_from"):
        spans.setdefault(str(row.task_id), []).append(BreakSpan(row.applies_from, row.ends_at))
    return spans


async def first_due_outside(
    task: Task, due_at: datetime | None, spans: Sequence[BreakSpan], budget: RecurrenceBudget
) -> datetime | None:
    """`due_at`, or when it falls inside a break the first due time after that break (and any it runs
    into); None when the rule ends first (services/chain/planning.py's rule, for one task)."""
    return await outside_breaks(schedule_of(task), due_at, spans, budget)

"""Catch-up after an outage: the occurrences the service could not plan in time, recorded, never omitted.

The next instance is the first occurrence due after max(this one's due time, now). When the chain
settles late (the database or every worker was away, or the settlement itself waited), occurrences fell
between the two: no instance stood for them, so nobody could prove them (services/chain/planning.py
answers which). Each is written as an EXCUSED instance (verdict reason SERVICE_OUTAGE) in the settling
transaction: seen in the history and the feed, never counted as missed, never in a streak or a progress
count, never appealable, never charged. The instance that stood open meanwhile is judged by its own
window as usual (MISSED when no proof came: its window was usable wherever the API was).

Days inside a planned break stay break days: only they need a read here, and only when a settlement came
late, so a chain on time pays nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from models import TaskBreak
from rules.breaks import BreakSpan, covering
from services.chain.planning import Step

log = logging.getLogger("proofloop.chain")


async def excused_times(steps: Mapping[str, Step], limit: int) -> dict[str, list[datetime]]:
    """The occurrences each step passed over that no planned break covers, by task id (tasks with none
    left out). One statement when some were passed over, none otherwise."""
    late = {task_id: step for task_id, step in steps.items() if step.passed_over}
    if not late:
        return {}
    for task_id, step in late.items():
        if step.more_passed_over:
            log.warning(
                "catch-up: %d occurrences inside the outage recorded, more not (PROOFLOOP_CATCH_UP_LIMIT)",
                limit,
                extra={"task_id": task_id},
            )
    since = min(step.passed_over[0] for step in late.values())
    until = max(step.passed_over[-1] for step in late.values())
    spans = await _breaks_between(list(late), since, until)
    excused = {
        task_id: [at for at in step.passed_over if covering(spans.get(task_id, ()), at) is None]
        for task_id, step in late.items()
    }
    return {task_id: times for task_id, times in excused.items() if times}


async def _breaks_between(
    task_ids: list[str], since: datetime, until: datetime
) -> dict[str, list[BreakSpan]]:
    """Each task's breaks overlapping [since, until] (one statement)."""
    spans: dict[str, list[BreakSpan]] = {}
    rows = TaskBreak.filter(task_id__in=task_ids, ends_at__gt=since, applies_from__lte=until)
    for row in await rows:
        spans.setdefault(str(row.task_id), []).append(BreakSpan(row.applies_from, row.ends_at))
    return spans

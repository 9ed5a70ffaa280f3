"""Streaks: consecutive VERIFIED instances, counted back from the latest settled one."""

from __future__ import annotations

from models import InstanceStatus, TaskInstance

# Canceled instances (a pause, an edit) neither extend nor break a streak.
_COUNTED = (InstanceStatus.VERIFIED, InstanceStatus.MISSED, InstanceStatus.REJECTED)
_BATCH = 200


async def streak_of(task_id: str) -> int:
    streak = 0
    offset = 0
    while True:
        statuses: list[InstanceStatus] = await (
            TaskInstance.filter(task_id=task_id, status__in=_COUNTED)
            .order_by("-seq")
            .offset(offset)
            .limit(_BATCH)
            .values_list("status", flat=True)  # type: ignore[assignment]
        )
        for status in statuses:
            if status != InstanceStatus.VERIFIED:
                return streak
            streak += 1
        if len(statuses) < _BATCH:
            return streak
        offset += _BATCH

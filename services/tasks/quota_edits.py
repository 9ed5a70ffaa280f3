"""Editing a quota goal's count and minimum gap (its period is fixed when it is created).

A lower count or a shorter gap is easier, so it waits out the commitment horizon like any easier rule;
a higher one applies at once. When a lower count applies to a period that already has that many proofs
counted, the period is met: it is settled VERIFIED then, and the next one planned, in the same
transaction.
"""

from __future__ import annotations

from datetime import datetime

from models import EventType, InstanceStatus, Task, TaskInstance, VerdictReason
from rules.errors import InvalidInput
from rules.quota import Period, Quota, check_quota
from services.chain import ChainTiming, plan_after_pending, settle_instance
from services.kit import BadInput
from services.tasks.drafts import TaskPatch
from services.tasks.pending_change import PendingChange

FIELD = "input.quota"


def check_quota_edit(task: Task, now: TaskPatch, later: PendingChange) -> None:
    """The goal as the edit leaves it now and once what waits applies must each be one that can be met."""
    if now.quota_count is None and now.quota_min_gap_seconds is None and later.is_empty:
        return
    if task.quota_period is None or task.quota_count is None:
        if now.quota_count is not None or now.quota_min_gap_seconds is not None:
            raise BadInput(FIELD, "applies only to quota goals")
        return
    current = Quota(
        count=now.quota_count if now.quota_count is not None else task.quota_count,
        period=Period(task.quota_period.value),
        week_start=task.quota_week_start or "MO",
        min_gap_seconds=(
            now.quota_min_gap_seconds if now.quota_min_gap_seconds is not None else task.quota_min_gap_seconds
        )
        or 0,
    )
    eventual = Quota(
        count=later.quota_count if later.quota_count is not None else current.count,
        period=current.period,
        week_start=current.week_start,
        min_gap_seconds=(
            later.quota_min_gap_seconds
            if later.quota_min_gap_seconds is not None
            else current.min_gap_seconds
        ),
    )
    try:
        check_quota(current, FIELD)
        check_quota(eventual, FIELD)
    except InvalidInput as exc:
        raise BadInput(exc.field, exc.message) from None


async def settle_met_periods(tasks: list[Task], now: datetime, timing: ChainTiming) -> None:
    """Under the tasks' locks, after their counts changed: a period already holding its new count is
    VERIFIED, and the next period planned."""
    goals = {str(t.id): t for t in tasks if t.quota_count is not None}
    if not goals:
        return
    open_periods = await TaskInstance.filter(task_id__in=list(goals), status=InstanceStatus.PENDING)
    for instance in open_periods:
        task = goals[str(instance.task_id)]
        if instance.opens_at <= now and instance.proofs_counted >= (task.quota_count or 1):
            met = (EventType.VERIFIED,)
            proof = VerdictReason.PROOF_ACCEPTED
            if await settle_instance(task, instance, InstanceStatus.VERIFIED, now, reason=proof, events=met):
                await plan_after_pending(task, instance, now=now, timing=timing, due=None)

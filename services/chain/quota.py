"""Quota goals in the chain: each period is one PENDING instance that counts accepted proofs.

An accepted proof counts if it came at least the task's minimum gap after the last counted one; the
count-th settles the instance VERIFIED and plans the next period in the same transaction, as any accepted
proof does. At the period's end an instance short of its count is MISSED like any other (either path). A
PARTNER goal's reviews wait inside the period: at its end the task's onTimeout decides those still open,
then the count does (`settle_reviews_at_period_end`), so those tasks take the row path. Counting itself
is chain.count_proof, beside the other settlements.
"""

from __future__ import annotations

from datetime import datetime

from tortoise.expressions import F

from models import (
    RejectionReason,
    Task,
    TaskInstance,
    Verification,
    VerificationMethod,
    VerificationStatus,
)
from rules.quota import counts_after_gap


def is_quota(task: Task) -> bool:
    return task.quota_count is not None


def has_reviews_in_period(task: Task) -> bool:
    """A PARTNER goal: its reviews wait inside the period, and its end decides those still open."""
    return is_quota(task) and task.method is VerificationMethod.PARTNER


async def far_enough_from_last(task: Task, instance: TaskInstance, at: datetime) -> bool:
    """Whether a proof at `at` keeps the minimum gap to the instance's counted and waiting proofs."""
    gap = task.quota_min_gap_seconds or 0
    if gap == 0:
        return True
    last = (
        await Verification.filter(
            instance_id=instance.id,
            status__in=(VerificationStatus.ACCEPTED, VerificationStatus.PENDING_REVIEW),
        )
        .order_by("-submitted_at")
        .first()
    )
    return counts_after_gap(last.submitted_at if last else None, at, gap)


async def settle_reviews_at_period_end(instance: TaskInstance, now: datetime, *, approve: bool) -> None:
    """A PARTNER goal's period ended: its open reviews are decided by the task's onTimeout (`approve`:
    chain.timeout_approves), and each approval counts."""
    waiting = await Verification.filter(instance_id=instance.id, status=VerificationStatus.PENDING_REVIEW)
    if not waiting:
        return
    await Verification.filter(id__in=[v.id for v in waiting]).update(
        status=VerificationStatus.ACCEPTED if approve else VerificationStatus.REJECTED,
        reason=None if approve else RejectionReason.REVIEW_TIMED_OUT,
        decided_at=now,
    )
    if approve:
        await TaskInstance.filter(id=instance.id).update(proofs_counted=F("proofs_counted") + len(waiting))
        instance.proofs_counted += len(waiting)


def quota_met(task: Task, instance: TaskInstance) -> bool:
    return instance.proofs_counted >= (task.quota_count or 1)

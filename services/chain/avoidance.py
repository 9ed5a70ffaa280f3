"""An avoid-a-place instance at its deadline: judged from its location samples (rules/avoid.py) into a
Verification the chain writes itself, VERIFIED or REJECTED, instead of MISSED; the samples go with it.

These tasks take the row path (settle_reads.NO_CHANGE_DUE leaves them out of sets): one more read of
the instance's samples and one delete per settlement.
"""

from __future__ import annotations

from datetime import datetime

from models import (
    EventType,
    InstanceStatus,
    LocationSample,
    RejectionReason,
    Task,
    TaskInstance,
    Verification,
    VerificationMethod,
    VerificationStatus,
)
from rules.avoid import Sample, judge_avoidance

# when a task's rule names none: ten minutes without a sample is not proof of staying away
DEFAULT_MAX_SAMPLE_GAP_SECONDS = 600


def is_avoid(task: Task) -> bool:
    return task.method is VerificationMethod.GPS and task.gps_avoid


async def avoidance_verdict(task: Task, instance: TaskInstance, now: datetime) -> Verification:
    """The instance's verdict, unsaved: ACCEPTED, or REJECTED with its reason (and when the place was
    entered: partners see that time, never a position)."""
    rows = await LocationSample.filter(instance_id=instance.id).values_list("recorded_at", "inside")
    samples = [Sample(at, bool(inside)) for at, inside in rows]
    gap = task.gps_max_sample_gap_seconds or DEFAULT_MAX_SAMPLE_GAP_SECONDS
    # stay out from the opening to the due time; the grace after it is for the last batch to arrive
    verdict = judge_avoidance(samples, instance.opens_at, instance.due_at, gap)
    return Verification(
        instance_id=instance.id,
        user_id=task.owner_id,
        method=VerificationMethod.GPS,
        status=VerificationStatus.ACCEPTED if verdict.reason is None else VerificationStatus.REJECTED,
        reason=RejectionReason(verdict.reason) if verdict.reason is not None else None,
        submitted_at=now,
        decided_at=now,
        recorded_at=verdict.entered_at,
    )


def verdict_settlement(verification: Verification) -> tuple[InstanceStatus, tuple[EventType, ...]]:
    if verification.status is VerificationStatus.ACCEPTED:
        return InstanceStatus.VERIFIED, (EventType.PROOF_SUBMITTED, EventType.VERIFIED)
    return InstanceStatus.REJECTED, (EventType.PROOF_SUBMITTED, EventType.REJECTED)


async def forget_samples(instance: TaskInstance) -> None:
    """Kept only as long as the rule needs them: the verdict is what remains."""
    await LocationSample.filter(instance_id=instance.id).delete()

"""Appeals: the owner asks the task's partners to overturn an automated rejection or a MISSED instance.

An appeal reopens the settled instance as PENDING_REVIEW with a review the partners decide like any
other (same deadline and onTimeout). Upheld, the instance becomes VERIFIED; denied or timed out against,
it returns to the status it had. Only that instance changes: the task's next instance was planned when
it settled and stays as planned.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from models import (
    EventType,
    InstanceStatus,
    RejectionReason,
    Task,
    TaskInstance,
    User,
    VerdictReason,
    Verification,
    VerificationMethod,
    VerificationStatus,
)
from services.chain import ChainTiming, move_fire_at
from services.feed import record_event
from services.kit import BadInput, Conflict, Forbidden, NotFound, parse_id, write_transaction
from services.partners import has_deciding_partner, is_active_partner
from services.proofs.review import check_note
from services.tasks import DEFAULT_REVIEW_WINDOW_SECONDS, lock_with_due_change

# what the service decided, not a partner: these rejections may be appealed
APPEALABLE_REASONS = frozenset(
    {
        RejectionReason.OUTSIDE_GEOFENCE,
        RejectionReason.LOW_ACCURACY,
        RejectionReason.IMPLAUSIBLE_LOCATION,
        RejectionReason.CAPTURED_OUTSIDE_WINDOW,
        RejectionReason.REUSED_MEDIA,
        RejectionReason.TOO_SHORT,
    }
)
APPEALABLE_STATUSES = (InstanceStatus.MISSED, InstanceStatus.REJECTED)


def appealable_until(instance: TaskInstance, window_seconds: int) -> datetime | None:
    """Until when the owner may appeal the settled instance (a verdict's appealableUntil), or None: only a
    MISSED instance not appealed yet (a REJECTED one was decided by a partner, a review's timeout or its
    samples, none of them an automated rejection of a proof)."""
    if instance.status is not InstanceStatus.MISSED or instance.settled_at is None:
        return None
    if instance.verdict_reason is VerdictReason.APPEAL_DENIED:
        return None
    return instance.settled_at + timedelta(seconds=window_seconds)


async def _appealed_instance(
    viewer: User, verification_id: str | None, instance_id: str | None
) -> tuple[TaskInstance, Task]:
    if (verification_id is None) == (instance_id is None):
        raise BadInput("verificationId", "give exactly one of verificationId and instanceId")
    verification = None
    if verification_id is not None:
        verification = await Verification.get_or_none(id=parse_id(verification_id, "verification"))
        if verification is None:
            raise NotFound("no such verification")
        found = await TaskInstance.filter(id=verification.instance_id).select_related("task").first()
    else:
        found = await TaskInstance.filter(id=parse_id(instance_id, "instance")).select_related("task").first()
    if found is None or found.task.deleted_at is not None:
        raise NotFound("no such instance")
    task = found.task
    if str(task.owner_id) != str(viewer.id):  # before anything that would tell a stranger about the proof
        if await is_active_partner(str(viewer.id), str(task.owner_id)):
            raise Forbidden("only the task's owner may appeal")
        raise NotFound("no such instance")
    if verification is not None and verification.reason not in APPEALABLE_REASONS:
        raise Conflict("only an automated rejection may be appealed")
    if verification is None and found.status is not InstanceStatus.MISSED:
        raise Conflict("an instance is appealed when MISSED; a rejected proof by its verificationId")
    return found, task


async def appeal(
    viewer: User,
    verification_id: str | None,
    instance_id: str | None,
    note: str | None,
    *,
    arrival: datetime,
    window_seconds: int,
    timing: ChainTiming,
) -> Verification:
    """Open the appeal's review; CONFLICT when not settled, already appealed, or past the window."""
    note = check_note(note, "note")
    instance, task = await _appealed_instance(viewer, verification_id, instance_id)
    if not await has_deciding_partner(viewer.id, arrival):
        raise Conflict("an appeal needs at least one ACTIVE partner able to decide it")
    async with write_transaction():
        task = await lock_with_due_change(str(task.id), timing)
        await instance.refresh_from_db()
        if await Verification.filter(instance_id=instance.id, appeal_of__isnull=False).exists():
            raise Conflict("this instance has been appealed already")
        prior = instance.status
        if prior not in APPEALABLE_STATUSES or instance.settled_at is None:
            raise Conflict(f"only a MISSED or REJECTED instance may be appealed, not {prior.value}")
        if arrival > instance.settled_at + timedelta(seconds=window_seconds):
            raise Conflict(f"appeals are taken for {window_seconds} seconds after settlement")
        window = task.review_window_seconds or DEFAULT_REVIEW_WINDOW_SECONDS
        deadline = arrival + timedelta(seconds=window)
        moved = await TaskInstance.filter(id=instance.id, status=prior).update(
            status=InstanceStatus.PENDING_REVIEW, review_deadline=deadline
        )
        if not moved:
            raise Conflict("the instance changed meanwhile: try again")
        await instance.refresh_from_db()
        await move_fire_at(instance, deadline, now=arrival, timing=timing)
        review = await Verification.create(
            instance_id=instance.id,
            user_id=viewer.id,
            method=VerificationMethod.PARTNER,
            status=VerificationStatus.PENDING_REVIEW,
            submitted_at=arrival,
            note=note,
            appeal_of=prior,
        )
        await record_event(EventType.APPEAL_REQUESTED, task, instance, arrival, review)
    return review

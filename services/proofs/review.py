"""Partner reviews: the owner asks, an active partner decides before the review deadline.

A review request takes the instance out of PENDING, so its transaction plans the next instance too;
the review then runs beside the schedule until its deadline, where the chain applies onTimeout. A quota
goal's reviews are proofs of its period instead: they wait inside it, and an approval counts.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from tortoise.queryset import QuerySet

from models import (
    EventType,
    InstanceStatus,
    RejectionReason,
    Task,
    TaskInstance,
    User,
    Verification,
    VerificationMethod,
    VerificationStatus,
)
from services.chain import (
    ChainTiming,
    count_proof,
    decided_event,
    decided_reason,
    decided_status,
    far_enough_from_last,
    is_quota,
    move_fire_at,
    plan_after_pending,
    settle_instance,
)
from services.feed import record_event
from services.kit import (
    BadInput,
    Conflict,
    Forbidden,
    Keyset,
    NotFound,
    SortKey,
    parse_id,
    parse_instant,
    parse_uuid,
    write_transaction,
)
from services.partners import Access, has_deciding_partner
from services.proofs.media import MediaPolicy, MediaUpload, judge_photo
from services.proofs.pipeline import Judgement, ProofKind, ProofTarget, open_period, prove, record_rejected
from services.schedules import DueTimes
from services.tasks import DEFAULT_REVIEW_WINDOW_SECONDS, lock_with_due_change

MAX_NOTE = 2000


def review_deadline(task: Task, due_at: datetime) -> datetime:
    window = task.review_window_seconds or DEFAULT_REVIEW_WINDOW_SECONDS
    return due_at + timedelta(seconds=max(task.grace_seconds, window))


def check_note(value: str | None, field: str) -> str | None:
    if value is not None and len(value) > MAX_NOTE:
        raise BadInput(field, f"must be at most {MAX_NOTE} characters")
    return value


async def request_review(
    viewer: User,
    instance_id: str,
    note: str | None,
    photo: MediaUpload | None,
    *,
    arrival: datetime,
    policy: MediaPolicy,
    timing: ChainTiming,
    max_attempts: int,
) -> Verification:
    """Put the owner's PENDING instance up for review; an attached photo passes the photo rules first.

    The photo is judged like submitPhoto's (capture time, reuse), so partners are never asked to spot
    a recycled picture; a failing photo is a REJECTED Verification and the instance stays PENDING.
    """
    note = check_note(note, "note")
    kind = ProofKind(
        VerificationMethod.PARTNER, accept=_open_review, evidence={"note": note}, admit=_has_partner
    )
    if photo is not None:

        async def judge(target: ProofTarget) -> Judgement:
            return await judge_photo(target, photo, policy)

        kind = replace(kind, judge=judge, upload_bytes=photo.size, storage=policy.storage)
    return await prove(viewer, instance_id, kind, arrival=arrival, timing=timing, max_attempts=max_attempts)


async def _has_partner(target: ProofTarget) -> None:
    if not await has_deciding_partner(target.task.owner_id, datetime.now(UTC)):
        # else nobody could decide it (and its timeout never approves without one)
        raise Conflict("a review needs at least one ACTIVE partner able to decide it: invite one first")


async def _open_review(
    task: Task,
    target: ProofTarget,
    draft: Verification,
    arrival: datetime,
    timing: ChainTiming,
    due: DueTimes | None,
) -> Verification | None:
    if is_quota(task):
        return await _wait_in_period(task, target, draft, arrival)
    deadline = review_deadline(task, target.instance.due_at)
    moved = await TaskInstance.filter(
        id=target.instance.id, status=InstanceStatus.PENDING, opens_at__lte=arrival, closes_at__gte=arrival
    ).update(status=InstanceStatus.PENDING_REVIEW, review_deadline=deadline)
    if not moved:
        return None
    instance = await TaskInstance.get(id=target.instance.id)
    await move_fire_at(instance, deadline, now=arrival, timing=timing)
    draft.status = VerificationStatus.PENDING_REVIEW
    await draft.save()
    await record_event(EventType.REVIEW_REQUESTED, task, instance, arrival, draft)
    await plan_after_pending(task, instance, now=arrival, timing=timing, due=due)
    return draft


async def _wait_in_period(
    task: Task, target: ProofTarget, draft: Verification, arrival: datetime
) -> Verification | None:
    """A quota goal's review waits inside the period, which stays PENDING and open to other proofs; at
    the period's end onTimeout decides it (services/chain/quota.py)."""
    instance = await open_period(target, arrival)
    if instance is None:
        return None
    if not await far_enough_from_last(task, instance, arrival):
        return await record_rejected(task, draft, RejectionReason.WITHIN_MIN_GAP, arrival)
    draft.status = VerificationStatus.PENDING_REVIEW
    await draft.save()
    await record_event(EventType.REVIEW_REQUESTED, task, instance, arrival, draft)
    return draft


async def _decide_in_period(
    task: Task,
    row: Verification,
    approve: bool,
    fields: dict[str, object],
    arrival: datetime,
    timing: ChainTiming,
) -> None:
    """A quota goal's review, decided while its period is open: an approval counts towards the period
    (VERIFIED on the count-th); either way the decision is one PROOF_SUBMITTED event of the period."""
    instance = await TaskInstance.get(id=row.instance_id)
    if instance.status is not InstanceStatus.PENDING or arrival > instance.closes_at:
        raise Conflict("this review is already decided: its period has ended")
    decided = await Verification.filter(id=row.id, status=VerificationStatus.PENDING_REVIEW).update(**fields)
    if not decided:
        raise Conflict("this proof is not waiting for a review")
    await row.refresh_from_db()
    proof = (EventType.PROOF_SUBMITTED,)
    if not approve:
        await record_event(EventType.PROOF_SUBMITTED, task, instance, arrival, row)
        return
    met = (EventType.VERIFIED,)
    await count_proof(task, instance, row, arrival, timing=timing, due=None, met=met, counted=proof)


def _check_waiting(row: Verification) -> None:
    """Why a proof that is not waiting for a review cannot be decided, said as it is."""
    if row.status is VerificationStatus.PENDING_REVIEW:
        return
    if row.reviewer_id is None and row.appeal_of is None and row.method is not VerificationMethod.PARTNER:
        raise Conflict(
            f"this proof was judged by its method ({row.method.value}) when it arrived: there is no review to"
            " decide (its owner may appeal a rejection, which partners then decide)",
            "JUDGED_BY_METHOD",
        )
    raise Conflict("this proof's review is already decided", "ALREADY_DECIDED")


async def decide_review(
    viewer: User,
    access: Access,
    verification_id: str,
    approve: bool,
    comment: str | None,
    *,
    arrival: datetime,
    timing: ChainTiming,
) -> Verification:
    """An active partner of the owner approves or rejects; the first decision before the deadline wins."""
    comment = check_note(comment, "comment")
    row = await Verification.get_or_none(id=parse_id(verification_id, "verification"))
    if row is None:
        raise NotFound("no such verification")
    if str(row.user_id) == str(viewer.id):
        raise Forbidden("a proof is reviewed by a partner, never by its owner")
    if not access.partners(row.user_id):
        raise NotFound("no such verification")
    if not access.decides_for(row.user_id):
        raise Forbidden(
            "a partner accepted while the owner's commitment horizon holds decides reviews once it has passed"
        )
    _check_waiting(row)
    outcome = decided_status(row, approve)
    fields: dict[str, object] = {
        "status": VerificationStatus.ACCEPTED if approve else VerificationStatus.REJECTED,
        "reason": None if approve else RejectionReason.PARTNER_REJECTED,
        "reviewer_id": viewer.id,
        "review_comment": comment,
        "decided_at": arrival,
    }
    async with write_transaction():
        instance = await TaskInstance.get(id=row.instance_id)
        task = await lock_with_due_change(str(instance.task_id), timing)
        if is_quota(task) and row.appeal_of is None:
            await _decide_in_period(task, row, approve, fields, arrival, timing)
            return row
        settled = await settle_instance(
            task,
            instance,
            outcome,
            arrival,
            reason=decided_reason(row, approve),
            expected=InstanceStatus.PENDING_REVIEW,
            events=(decided_event(row, approve),),
            verification=row,
            review_deadline__gt=arrival,
        )
        if not settled:
            raise Conflict(
                "this review's deadline has passed, or a partner decided it first", "REVIEW_CLOSED"
            )
        decided = await Verification.filter(id=row.id, status=VerificationStatus.PENDING_REVIEW).update(
            **fields
        )
        if not decided:  # rolls the instance and its event back too
            raise Conflict("this proof is not waiting for a review")
        await row.refresh_from_db()
    return row


# the review queue, oldest first
REVIEW_ORDER = Keyset("review", (SortKey("submitted_at", parse_instant), SortKey("id", parse_uuid)))


def reviewable(access: Access) -> QuerySet[Verification]:
    """PENDING_REVIEW proofs of the users whose reviews the viewer may decide now."""
    return Verification.filter(
        user_id__in=sorted(access.deciding),
        status=VerificationStatus.PENDING_REVIEW,
        # a deleted task's review was canceled; a quota goal's waits in its PENDING period
        instance__status__in=(InstanceStatus.PENDING_REVIEW, InstanceStatus.PENDING),
    )


async def decisions_waiting(access: Access) -> tuple[int, int]:
    """(reviews, appeals) in the viewer's review queue: an appeal is the review it opens."""
    if not access.deciding:
        return 0, 0
    reviews = await reviewable(access).filter(appeal_of__isnull=True).count()
    appeals = await reviewable(access).filter(appeal_of__isnull=False).count()
    return reviews, appeals


async def review_queue(access: Access, first: int) -> list[Verification]:
    """The first `first` of the viewer's review queue, oldest first."""
    if not access.deciding or first == 0:
        return []
    return await reviewable(access).order_by(*REVIEW_ORDER.order()).limit(first)

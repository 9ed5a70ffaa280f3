"""The steps every proof runs, in one order (`prove`), and how its outcome is written.

The cheapest checks come first, so a doomed proof costs as little as possible: who may prove the
instance and its state, the window at arrival (a late proof is recorded as it is, its upload unread),
the storage quota, and only then the kind's expensive checks (a decode under the gate, the rules).
A proof's time is its request's arrival on the database clock. An accepted proof settles the instance
with a compare-and-set on status AND window in the transaction that plans the next instance; a rejected
one is a REJECTED Verification that leaves the instance PENDING for a retry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

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
from rules.window import in_window
from services.chain import (
    ChainTiming,
    count_proof,
    far_enough_from_last,
    is_quota,
    move_fire_at,
    plan_after_pending,
    settle_instance,
)
from services.feed import record_event
from services.kit import BadInput, Conflict, NotFound, parse_id, write_transaction
from services.media import MediaCopy, MediaStorage, StagedBlobs, check_quota
from services.partners import require_own_task
from services.schedules import DueTimes, prefetch_due_times, schedule_of
from services.tasks import apply_due_change_before_proof, lock_with_due_change

INSTANCE_FIELD = "instanceId"
# A proof that arrived in time beats the deadline: near closesAt the chain's timer waits this long for it.
DEADLINE_HOLD = timedelta(seconds=60)


@dataclass(frozen=True)
class ProofTarget:
    instance: TaskInstance
    task: Task


@dataclass(frozen=True)
class Judgement:
    """What a kind's expensive checks found: the first rule broken, and what the Verification keeps."""

    reason: RejectionReason | None = None
    evidence: Mapping[str, object] = field(default_factory=dict)
    media: MediaCopy | None = None  # stored only if the proof is accepted


class Accept(Protocol):
    """What acceptance writes, under the task's lock; None when the instance moved on meanwhile."""

    async def __call__(
        self,
        task: Task,
        target: ProofTarget,
        draft: Verification,
        arrival: datetime,
        timing: ChainTiming,
        due: DueTimes | None,
    ) -> Verification | None: ...


class Journal(Protocol):
    """What a kind records beside its Verification, in the same transaction under the task's lock (its
    refusal rolls the proof back: nothing is kept of a proof the kind refuses to record)."""

    async def __call__(self, task: Task, verification: Verification, /) -> None: ...


@dataclass(frozen=True)
class ProofKind:
    """What one kind of proof brings to the pipeline; `prove` decides when each part runs."""

    method: VerificationMethod
    accept: Accept
    judge: Callable[[ProofTarget], Awaitable[Judgement]] | None = None  # the expensive checks
    evidence: Mapping[str, object] = field(default_factory=dict)  # known before judging (a note)
    admit: Callable[[ProofTarget], Awaitable[None]] | None = None  # a precondition of the kind's own
    upload_bytes: int | None = None  # an upload's size, counted against the quota before it is read
    storage: MediaStorage | None = None
    judge_late: bool = False  # judge a proof that arrived outside the window too (it is cheap)
    journal: Journal | None = None


async def prove(
    viewer: User,
    instance_id: str,
    kind: ProofKind,
    *,
    arrival: datetime,
    timing: ChainTiming,
    max_attempts: int,
) -> Verification:
    """Run a proof's steps in order and return its Verification (or raise the error the contract names)."""
    # 1. the rules it meets: a change of its task that was due when it arrived applies first
    await apply_due_change_before_proof(instance_id, arrival, timing)
    # who may prove it: the viewer's own PENDING instance of this kind, within its attempts quota
    target = await proof_target(viewer, instance_id, kind.method, max_attempts=max_attempts)
    if kind.admit is not None:
        await kind.admit(target)
    # 2. cheap checks: the window at arrival (a late proof is rejected unread), then the storage quota
    late = window_reason(target, arrival)
    if late is not None and not kind.judge_late:
        draft = new_verification(target, arrival, **kind.evidence)
        return await record_outcome(target, draft, late, arrival, timing, kind.accept, kind.journal)
    if kind.storage is not None and kind.upload_bytes is not None:
        await check_quota(str(viewer.id), kind.upload_bytes, kind.storage.quota_bytes)
    # 3. expensive checks, the deadline held meanwhile: a decode under the gate, then the kind's rules
    async with holding_deadline(target, arrival, timing):
        judged = Judgement() if kind.judge is None else await kind.judge(target)
        reason = late or judged.reason
        draft = new_verification(target, arrival, **kind.evidence, **judged.evidence)
        # 4. settle (or open the review) and plan the next instance in one transaction, then 5. after
        # commit, keep the media only for a proof the transaction accepted
        if reason is not None or judged.media is None or kind.storage is None:
            return await record_outcome(target, draft, reason, arrival, timing, kind.accept, kind.journal)
        return await _record_keeping_media(
            target, draft, judged.media, kind.storage, arrival, timing, kind.accept
        )


async def proof_target(
    viewer: User, instance_id: str, method: VerificationMethod, *, max_attempts: int
) -> ProofTarget:
    """The caller's own PENDING instance of a task proved by `method`, or the error the contract names.

    Also the per-instance attempts quota: checked here, before any proof is read or decoded.
    """
    instance = await owned_instance(viewer, instance_id)
    task = instance.task
    if task.method is not method:
        raise BadInput(INSTANCE_FIELD, f"this task is proved by {task.method.value}, not {method.value}")
    if instance.status is not InstanceStatus.PENDING:
        raise Conflict(f"the instance is already {instance.status.value}")
    # a quota goal's period takes its count of proofs on top of the attempts any instance is allowed
    allowed = max_attempts + (task.quota_count or 1) - 1
    if await Verification.filter(instance_id=instance.id).count() >= allowed:
        raise Conflict(f"this instance has had {allowed} proof attempts, the most allowed")
    return ProofTarget(instance=instance, task=task)


async def owned_instance(viewer: User, instance_id: str) -> TaskInstance:
    """The viewer's own instance (its task loaded): FORBIDDEN for a partner who may see it, NOT_FOUND for
    everyone else, as for one that does not exist."""
    instance = await TaskInstance.filter(id=parse_id(instance_id, "instance")).select_related("task").first()
    if instance is None or instance.task.deleted_at is not None:
        raise NotFound("no such instance")
    await require_own_task(
        str(viewer.id), instance.task, "only the task's owner may prove it", "no such instance"
    )
    return instance


@asynccontextmanager
async def holding_deadline(
    target: ProofTarget, arrival: datetime, timing: ChainTiming
) -> AsyncIterator[None]:
    """While a proof that arrived inside the window is judged, the instance cannot be settled MISSED.

    Near closesAt, fire_at moves past the judging time (the chain's early link just resends itself);
    afterwards a still-PENDING instance gets its deadline back. A crash leaves only a later fire_at.
    """
    instance = target.instance
    near = instance.closes_at - DEADLINE_HOLD <= arrival <= instance.closes_at
    held = near and bool(
        await TaskInstance.filter(
            id=instance.id, status=InstanceStatus.PENDING, fire_at__lt=arrival + DEADLINE_HOLD
        ).update(fire_at=arrival + DEADLINE_HOLD)
    )
    try:
        yield
    finally:
        if held:
            async with write_transaction():
                current = await TaskInstance.get_or_none(id=instance.id, status=InstanceStatus.PENDING)
                if current is not None:
                    await move_fire_at(current, current.closes_at, now=arrival, timing=timing)


def window_reason(target: ProofTarget, arrival: datetime) -> RejectionReason | None:
    """OUTSIDE_WINDOW unless the request arrived within [opensAt, closesAt]."""
    if in_window(arrival, target.instance.opens_at, target.instance.closes_at):
        return None
    return RejectionReason.OUTSIDE_WINDOW


def new_verification(target: ProofTarget, arrival: datetime, **evidence: object) -> Verification:
    """An unsaved Verification of the target's method; the outcome is filled in when it is recorded."""
    return Verification(
        instance_id=target.instance.id,
        user_id=target.task.owner_id,
        method=target.task.method,
        submitted_at=arrival,
        **evidence,
    )


async def settle_verified(
    task: Task,
    target: ProofTarget,
    draft: Verification,
    arrival: datetime,
    timing: ChainTiming,
    due: DueTimes | None,
) -> Verification | None:
    """An accepted proof of its own: VERIFIED, judged at arrival (settled only if it came in the window);
    for a quota goal, counted (VERIFIED on the count-th)."""
    if is_quota(task):
        return await count_toward_quota(task, target, draft, arrival, timing, due)
    draft.status, draft.decided_at = VerificationStatus.ACCEPTED, arrival
    await draft.save()  # in the caller's transaction: a proof that is not accepted is recorded REJECTED
    instance = target.instance
    settled = await settle_instance(
        task,
        instance,
        InstanceStatus.VERIFIED,
        arrival,
        reason=VerdictReason.PROOF_ACCEPTED,
        events=(EventType.PROOF_SUBMITTED, EventType.VERIFIED),
        verification=draft,
        opens_at__lte=arrival,
        closes_at__gte=arrival,
    )
    if not settled:
        return None
    await plan_after_pending(task, instance, now=arrival, timing=timing, due=due)
    return draft


async def open_period(target: ProofTarget, arrival: datetime) -> TaskInstance | None:
    """A quota goal's period as it is under the task's lock, if it is still open at `arrival`."""
    instance = await TaskInstance.get(id=target.instance.id)
    if instance.status is not InstanceStatus.PENDING:
        return None
    return instance if in_window(arrival, instance.opens_at, instance.closes_at) else None


async def count_toward_quota(
    task: Task,
    target: ProofTarget,
    draft: Verification,
    arrival: datetime,
    timing: ChainTiming,
    due: DueTimes | None,
) -> Verification | None:
    """A quota goal's accepted proof: counted unless it comes within the minimum gap of the last one
    (then REJECTED WITHIN_MIN_GAP, the period still open)."""
    instance = await open_period(target, arrival)
    if instance is None:
        return None  # the period closed while it was judged: record_outcome rejects it
    if not await far_enough_from_last(task, instance, arrival):
        return await record_rejected(task, draft, RejectionReason.WITHIN_MIN_GAP, arrival)
    draft.status, draft.decided_at = VerificationStatus.ACCEPTED, arrival
    await draft.save()
    proof = (EventType.PROOF_SUBMITTED,)
    met = (EventType.PROOF_SUBMITTED, EventType.VERIFIED)
    await count_proof(task, instance, draft, arrival, timing=timing, due=due, met=met, counted=proof)
    return draft


async def record_outcome(
    target: ProofTarget,
    draft: Verification,
    reason: RejectionReason | None,
    arrival: datetime,
    timing: ChainTiming,
    accept: Accept = settle_verified,
    journal: Journal | None = None,
) -> Verification:
    """Write the proof's outcome in one transaction: accepted, or REJECTED leaving the instance PENDING."""
    due = await planned_due_times(target, timing) if reason is None else None
    async with write_transaction():
        task = await lock_with_due_change(str(target.task.id), timing)
        recorded = None
        if reason is None:
            recorded = await accept(task, target, draft, arrival, timing, due)
            # unless the instance settled meanwhile (record_rejected checks), it closed while we judged
            reason = RejectionReason.OUTSIDE_WINDOW
        if recorded is None:
            recorded = await record_rejected(task, draft, reason, arrival)
        if journal is not None:
            await journal(task, recorded)
        return recorded


async def _record_keeping_media(
    target: ProofTarget,
    draft: Verification,
    media: MediaCopy,
    storage: MediaStorage,
    arrival: datetime,
    timing: ChainTiming,
    accept: Accept,
) -> Verification:
    """Record an accepted proof with its media: blobs written first, removed again unless its row commits."""
    await check_quota(str(target.task.owner_id), media.stored_bytes, storage.quota_bytes)
    staged = StagedBlobs(storage.store, (media.clean, media.thumbnail))
    await staged.write()
    draft.media_digest, draft.thumbnail_digest = staged.digests
    draft.media_mime, draft.media_bytes = media.mime, media.stored_bytes
    try:
        row = await record_outcome(target, draft, None, arrival, timing, accept)
    except BaseException:  # a CONFLICT or a failure rolled the row back: its files go too
        await staged.discard()
        raise
    if row.status is VerificationStatus.REJECTED:  # the instance moved on while we judged: keep no media
        await Verification.filter(id=row.id).update(
            media_digest=None, media_mime=None, thumbnail_digest=None, media_bytes=None
        )
        row.media_digest = row.media_mime = row.thumbnail_digest = row.media_bytes = None
        await staged.discard()
    else:
        await staged.confirm()
    return row


async def planned_due_times(target: ProofTarget, timing: ChainTiming) -> DueTimes:
    """The due times the next instance is planned from, expanded before the task's row is locked."""
    return await prefetch_due_times(schedule_of(target.task), target.instance.due_at, timing.recurrence)


async def record_rejected(
    task: Task, draft: Verification, reason: RejectionReason, arrival: datetime
) -> Verification:
    instance = await TaskInstance.get(id=draft.instance_id)
    if instance.status is not InstanceStatus.PENDING:
        raise Conflict(f"the instance is already {instance.status.value}")
    draft.status, draft.reason, draft.decided_at = VerificationStatus.REJECTED, reason, arrival
    await draft.save()
    await record_event(EventType.PROOF_SUBMITTED, task, instance, arrival, draft)
    return draft

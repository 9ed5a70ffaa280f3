"""The steps every proof runs: who may prove an instance, and how its outcome is written.

A proof's time is its request's arrival on the database clock. An accepted proof settles the instance
with a compare-and-set on status AND window (judged at arrival) in the transaction that plans the next
instance; a rejected one is a REJECTED Verification that leaves the instance PENDING for a retry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

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
from services.access import is_active_partner
from services.chain import ChainTiming, lock_task, move_fire_at, plan_after_pending, settle_instance
from services.db import write_transaction
from services.errors import BadInput, Conflict, Forbidden, NotFound
from services.events import record_event
from services.ids import parse_id
from services.schedules import DueTimes, prefetch_due_times, schedule_of
from verification.window import in_window

INSTANCE_FIELD = "instanceId"
# A proof that arrived in time beats the deadline: near closesAt the chain's timer waits this long for it.
DEADLINE_HOLD = timedelta(seconds=60)


@dataclass(frozen=True)
class ProofTarget:
    instance: TaskInstance
    task: Task


async def proof_target(
    viewer: User, instance_id: str, method: VerificationMethod, *, max_attempts: int
) -> ProofTarget:
    """The caller's own PENDING instance of a task proved by `method`, or the error the contract names.

    Also the per-instance attempts quota: checked here, before any proof is read or decoded.
    """
    instance = await TaskInstance.filter(id=parse_id(instance_id, "instance")).select_related("task").first()
    if instance is None or instance.task.deleted_at is not None:
        raise NotFound("no such instance")
    task = instance.task
    if str(task.owner_id) != str(viewer.id):
        if await is_active_partner(str(viewer.id), str(task.owner_id)):
            raise Forbidden("only the task's owner may submit proof for it")
        raise NotFound("no such instance")
    if task.method is not method:
        raise BadInput(INSTANCE_FIELD, f"this task is proved by {task.method.value}, not {method.value}")
    if instance.status is not InstanceStatus.PENDING:
        raise Conflict(f"the instance is already {instance.status.value}")
    if await Verification.filter(instance_id=instance.id).count() >= max_attempts:
        raise Conflict(f"this instance has had {max_attempts} proof attempts, the most allowed")
    return ProofTarget(instance=instance, task=task)


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


async def record_proof(
    target: ProofTarget,
    draft: Verification,
    reason: RejectionReason | None,
    arrival: datetime,
    timing: ChainTiming,
) -> Verification:
    """Write the proof's outcome: accepted proofs settle the instance, rejected ones leave it PENDING."""
    due = await planned_due_times(target, timing) if reason is None else None
    async with write_transaction():
        task = await lock_task(str(target.task.id))
        if reason is None:
            # judged at arrival: settled only if it came inside the window
            if await settle_instance(
                target.instance.id,
                InstanceStatus.VERIFIED,
                arrival,
                opens_at__lte=arrival,
                closes_at__gte=arrival,
            ):
                return await _record_verified(task, draft, arrival, timing, due)
            reason = RejectionReason.OUTSIDE_WINDOW  # unless the instance settled meanwhile (checked below)
        return await record_rejected(task, draft, reason, arrival)


async def planned_due_times(target: ProofTarget, timing: ChainTiming) -> DueTimes:
    """The due times the next instance is planned from, expanded before the task's row is locked."""
    return await prefetch_due_times(schedule_of(target.task), target.instance.due_at, timing.recurrence)


async def _record_verified(
    task: Task, draft: Verification, arrival: datetime, timing: ChainTiming, due: DueTimes | None
) -> Verification:
    instance = await TaskInstance.get(id=draft.instance_id)
    draft.status, draft.decided_at = VerificationStatus.ACCEPTED, arrival
    await draft.save()
    await record_event(EventType.PROOF_SUBMITTED, task, instance, arrival, draft)
    await record_event(EventType.VERIFIED, task, instance, arrival, draft)
    await plan_after_pending(task, instance, now=arrival, timing=timing, due=due)
    return draft


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

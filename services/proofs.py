"""Proofs: who may prove an instance, how its outcome is written, and GPS check-ins.

A proof's time is its request's arrival on the database clock. An accepted proof settles the instance
with a compare-and-set on status AND window (judged at arrival) in the transaction that plans the next
instance; a rejected one is a REJECTED Verification that leaves the instance PENDING for a retry.
"""

from __future__ import annotations

import math
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
from verification.errors import InvalidInput
from verification.gps import GpsFix, GpsRule, judge_check_in, validate_point
from verification.window import in_window

INSTANCE_FIELD = "instanceId"
# A phone's clock may run a little ahead of the database's; more than this is a lie about the future.
RECORDED_AT_SLACK = timedelta(seconds=60)
# No fix on Earth is vaguer than half its circumference; larger numbers are not measurements.
MAX_FIX_ACCURACY_METERS = 20_037_508.0
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


@dataclass(frozen=True)
class CheckIn:
    latitude: float
    longitude: float
    accuracy_meters: float
    recorded_at: datetime | None  # the client's clock: it only feeds the speed check


def check_check_in(check_in: CheckIn, arrival: datetime) -> None:
    try:
        validate_point(check_in.latitude, check_in.longitude, "location")
    except InvalidInput as exc:
        raise BadInput(exc.field, exc.message) from None
    if not (
        math.isfinite(check_in.accuracy_meters) and 0 < check_in.accuracy_meters <= MAX_FIX_ACCURACY_METERS
    ):
        raise BadInput("accuracyMeters", f"must be greater than 0 and at most {MAX_FIX_ACCURACY_METERS:.0f}")
    if check_in.recorded_at is not None and check_in.recorded_at > arrival + RECORDED_AT_SLACK:
        raise BadInput("recordedAt", "must not be in the future")


async def previous_fix(user_id: str) -> GpsFix | None:
    """The user's latest check-in with a location, on any task: the start of the speed check."""
    row = await (
        Verification.filter(user_id=user_id, method=VerificationMethod.GPS, latitude__isnull=False)
        .order_by("-submitted_at", "-id")
        .first()
    )
    if row is None or row.latitude is None or row.longitude is None:
        return None
    return GpsFix(
        latitude=row.latitude,
        longitude=row.longitude,
        accuracy_meters=row.accuracy_meters or 0.0,
        at=row.recorded_at or row.submitted_at,
    )


def gps_rule_of(task: Task) -> GpsRule:
    if task.gps_latitude is None or task.gps_longitude is None or task.gps_radius_meters is None:
        raise Conflict("the task has no GPS rule")
    return GpsRule(
        latitude=task.gps_latitude,
        longitude=task.gps_longitude,
        radius_meters=task.gps_radius_meters,
        max_accuracy_meters=task.gps_max_accuracy_meters or 0.0,
    )


async def check_in(
    viewer: User,
    instance_id: str,
    check_in: CheckIn,
    *,
    arrival: datetime,
    max_speed_kmh: float,
    timing: ChainTiming,
    max_attempts: int,
) -> Verification:
    check_check_in(check_in, arrival)
    target = await proof_target(viewer, instance_id, VerificationMethod.GPS, max_attempts=max_attempts)
    async with holding_deadline(target, arrival, timing):
        previous = await previous_fix(str(viewer.id))
        at = check_in.recorded_at or arrival
        if previous is not None and at < previous.at:
            # a fix claimed to predate the previous one would stretch the time available for the jump
            at = previous.at
        fix = GpsFix(check_in.latitude, check_in.longitude, check_in.accuracy_meters, at)
        decision = judge_check_in(gps_rule_of(target.task), fix, previous, max_speed_kmh=max_speed_kmh)
        reason = window_reason(target, arrival)
        if reason is None and decision.reason is not None:
            reason = RejectionReason(decision.reason)
        draft = new_verification(
            target,
            arrival,
            latitude=check_in.latitude,
            longitude=check_in.longitude,
            accuracy_meters=check_in.accuracy_meters,
            recorded_at=at,
            distance_meters=decision.distance_meters,
        )
        return await record_proof(target, draft, reason, arrival, timing)

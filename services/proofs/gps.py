"""GPS check-ins: the fix's plausibility (range, accuracy, speed from the previous fix) and the geofence."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from models import RejectionReason, Task, User, Verification, VerificationMethod, VerificationStatus
from rules.errors import InvalidInput
from rules.gps import GpsFix, GpsRule, judge_check_in, validate_point
from services.chain import ChainTiming
from services.kit import BadInput, Conflict
from services.proofs.pipeline import (
    Judgement,
    ProofKind,
    ProofTarget,
    prove,
    settle_verified,
    window_reason,
)

# A phone's clock may run a little ahead of the database's; more than this is a lie about the future.
RECORDED_AT_SLACK = timedelta(seconds=60)
# No fix on Earth is vaguer than half its circumference; larger numbers are not measurements.
MAX_FIX_ACCURACY_METERS = 20_037_508.0


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
    """The user's latest ACCEPTED check-in, on any task: the start of the speed check. A refused fix may be
    the very error the next one corrects (a wrong position a moment ago must not hold the right one back)."""
    row = await (
        Verification.filter(
            user_id=user_id,
            method=VerificationMethod.GPS,
            status=VerificationStatus.ACCEPTED,
            latitude__isnull=False,
        )
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

    async def judge(target: ProofTarget) -> Judgement:
        return await judge_fix(target, check_in, arrival, max_speed_kmh)

    # a late check-in is judged too: its owner sees where it was and how far from the centre
    kind = ProofKind(
        VerificationMethod.GPS, accept=settle_verified, judge=judge, judge_late=True, admit=_not_avoid
    )
    return await prove(viewer, instance_id, kind, arrival=arrival, timing=timing, max_attempts=max_attempts)


async def _not_avoid(target: ProofTarget) -> None:
    if target.task.gps_avoid:  # proved by staying out, not by being there
        raise BadInput("instanceId", "an avoid-a-place task is proved by reportLocations, not checkIn")


async def judge_fix(
    target: ProofTarget, check_in: CheckIn, arrival: datetime, max_speed_kmh: float
) -> Judgement:
    """The geofence, the fix's accuracy, and the speed from the user's previous fix."""
    previous = await previous_fix(str(target.task.owner_id))
    at = check_in.recorded_at or arrival
    if previous is not None and at < previous.at:
        # a fix claimed to predate the previous one would stretch the time available for the jump
        at = previous.at
    fix = GpsFix(check_in.latitude, check_in.longitude, check_in.accuracy_meters, at)
    decision = judge_check_in(gps_rule_of(target.task), fix, previous, max_speed_kmh=max_speed_kmh)
    return Judgement(
        reason=None if decision.reason is None else RejectionReason(decision.reason),
        evidence={
            "latitude": check_in.latitude,
            "longitude": check_in.longitude,
            "accuracy_meters": check_in.accuracy_meters,
            "recorded_at": at,
            "distance_meters": decision.distance_meters,
            # a late check-in cannot pass by waiting: only a refusal inside the window says when to retry
            "retry_after_seconds": None if window_reason(target, arrival) else decision.retry_after_seconds,
        },
    )

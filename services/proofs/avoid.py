"""Avoid-a-place: the owner's phone reports location samples for the open instance in batches; the
chain judges them at the deadline (services/chain/avoidance.py, rules/avoid.py).

A sample is kept only as when it was recorded and whether it was certainly inside the place: never a
position, and deleted once the instance is judged. Samples count when recorded from the window's opening
to the due time with an accuracy the rule accepts; the grace after the due time is for the last batch to
arrive. Partners see the verdict (and when the place was entered), never a sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from models import InstanceStatus, LocationSample, TaskInstance, User, VerificationMethod
from rules.avoid import certainly_inside
from rules.gps import haversine_meters
from services.chain import lock_task
from services.kit import BadInput, Conflict, write_transaction
from services.proofs.gps import CheckIn, check_check_in
from services.proofs.pipeline import owned_instance

MAX_SAMPLES_PER_REQUEST = 500
MAX_SAMPLES_PER_INSTANCE = 5000  # a sample every 10 s for nearly 14 hours


@dataclass(frozen=True)
class LocationReport:
    accepted: int  # kept: inside the window, accurate enough
    ignored: int  # recorded outside the window, or vaguer than the rule accepts
    total: int  # kept for this instance so far


async def report_locations(
    viewer: User, instance_id: str, samples: Sequence[CheckIn], *, arrival: datetime
) -> LocationReport:
    if not samples or len(samples) > MAX_SAMPLES_PER_REQUEST:
        raise BadInput("samples", f"must hold 1 to {MAX_SAMPLES_PER_REQUEST} samples")
    for n, sample in enumerate(samples):
        if sample.recorded_at is None:
            raise BadInput(f"samples.{n}.recordedAt", "is required")
        try:
            check_check_in(sample, arrival)
        except BadInput as exc:
            field = exc.field.removeprefix("location.")
            raise BadInput(f"samples.{n}.{field}", exc.message.split(": ", 1)[-1]) from None
    instance = await owned_instance(viewer, instance_id)
    task = instance.task
    if task.method is not VerificationMethod.GPS or not task.gps_avoid:
        raise BadInput("instanceId", "this task is not an avoid-a-place task (gps.avoid): use checkIn")
    if arrival > instance.closes_at:
        raise Conflict("the instance's window has closed: it is judged from the samples it has")
    # a phone's clock may run a little ahead (check_check_in refuses more than RECORDED_AT_SLACK), but no
    # sample covers time not yet lived: one recorded after its request arrived says where the phone is
    # now, and counts as recorded then
    kept = [
        LocationSample(
            instance_id=instance.id,
            recorded_at=min(s.recorded_at, arrival),
            inside=certainly_inside(
                haversine_meters(
                    s.latitude, s.longitude, task.gps_latitude or 0.0, task.gps_longitude or 0.0
                ),
                s.accuracy_meters,
                task.gps_radius_meters or 0.0,
            ),
        )
        for s in samples
        if s.recorded_at is not None
        and instance.opens_at <= min(s.recorded_at, arrival) <= instance.due_at
        and s.accuracy_meters <= (task.gps_max_accuracy_meters or 0.0)
    ]
    async with write_transaction():
        await lock_task(str(task.id))  # serializes reports and the deadline's verdict
        current = await TaskInstance.get(id=instance.id)
        if current.status is not InstanceStatus.PENDING:
            raise Conflict(f"the instance is already {current.status.value}")
        total = await LocationSample.filter(instance_id=instance.id).count()
        if total + len(kept) > MAX_SAMPLES_PER_INSTANCE:
            raise Conflict(f"an instance keeps at most {MAX_SAMPLES_PER_INSTANCE} samples")
        if kept:
            await LocationSample.bulk_create(kept)
    return LocationReport(accepted=len(kept), ignored=len(samples) - len(kept), total=total + len(kept))

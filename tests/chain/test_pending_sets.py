"""Pending changes that come due together apply as one set (tasks.apply_changes_of): the set writes
exactly the rows the same changes write one task at a time, and a row another transaction holds is left
to the row path, which applies it once the lock is gone."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from models import (
    InstanceReminder,
    InstanceStatus,
    ReminderAnchor,
    ReviewTimeoutPolicy,
    Task,
    TaskInstance,
    TaskState,
    User,
    VerificationMethod,
)
from rules.recurrence import Schedule
from services.chain.chain import ChainTiming, lock_task
from services.kit.db import db_now, write_transaction
from services.reminders import ReminderOffset
from services.tasks.drafts import ColumnRule, GpsRuleDraft, PartnerRuleDraft, TaskDraft
from services.tasks.pending_change import PendingChange, WaitingShape
from services.tasks.pending_changes import apply_pending_change, apply_pending_changes, eventual_due_times
from services.tasks.pending_delivery import apply_changes_of
from services.tasks.tasks import create_task_planned

TIMING = ChainTiming(link_horizon_seconds=0)  # nothing linked: these tasks stay out of the run's worker
GPS = GpsRuleDraft(latitude=52.52, longitude=13.405, radius_meters=150, max_accuracy_meters=100)
REMINDERS = (ReminderOffset(ReminderAnchor.DUE, 600), ReminderOffset(ReminderAnchor.OPENS, 60))


def _shape(rrule: str | None, *, days: float = 2, zone: str = "Europe/Berlin") -> WaitingShape:
    starts = (datetime.now(UTC) + timedelta(days=days)).replace(second=0, microsecond=0)
    return WaitingShape(starts_at=starts, rrule=rrule, timezone=zone, count_ends_at=None)


# (method, the task's extra rules, the change that waits)
CASES: dict[str, tuple[VerificationMethod, dict[str, object], PendingChange]] = {
    "pause": (VerificationMethod.PHOTO, {}, PendingChange(pause=True)),
    "delete": (VerificationMethod.PHOTO, {}, PendingChange(delete=True)),
    "geofence": (
        VerificationMethod.GPS,
        {"gps": GPS},
        PendingChange(gps_center=(52.0, 13.0), gps_radius_meters=2000.0, gps_max_accuracy_meters=300.0),
    ),
    "radius alone": (VerificationMethod.GPS, {"gps": GPS}, PendingChange(gps_radius_meters=900.0)),
    "video": (
        VerificationMethod.VIDEO,
        {"column_rules": {ColumnRule.VIDEO_MIN_DURATION: 5.0}},
        PendingChange(column_rules={ColumnRule.VIDEO_MIN_DURATION: 1.0}),
    ),
    "partner review": (
        VerificationMethod.PARTNER,
        {"partner": PartnerRuleDraft(3600, ReviewTimeoutPolicy.REJECT)},
        PendingChange(partner_review=PartnerRuleDraft(600, ReviewTimeoutPolicy.APPROVE)),
    ),
    "new shape": (VerificationMethod.PHOTO, {}, PendingChange(shape=_shape("FREQ=WEEKLY;BYDAY=MO,TH"))),
    "new shape with reminders": (
        VerificationMethod.PHOTO,
        {"reminders": REMINDERS},
        PendingChange(shape=_shape("FREQ=DAILY;INTERVAL=2"), window_seconds=1800),
    ),
    "window and grace": (VerificationMethod.PHOTO, {}, PendingChange(window_seconds=120, grace_seconds=30)),
    "shape then pause": (
        VerificationMethod.PHOTO,
        {},
        PendingChange(shape=_shape("FREQ=DAILY"), pause=True),
    ),
    "one-off already past": (
        VerificationMethod.PHOTO,
        {},
        PendingChange(shape=_shape(None, days=-1, zone="UTC")),
    ),
    "rule and pause": (
        VerificationMethod.GPS,
        {"gps": GPS},
        PendingChange(gps_radius_meters=500.0, pause=True),
    ),
}


async def _owner() -> User:
    return await User.create(email=f"{uuid.uuid4().hex}@example.com", display_name="n", password_hash="x")


def _tomorrow() -> datetime:
    return (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)


async def _task(
    owner: User,
    method: VerificationMethod,
    rules: dict[str, object],
    change: PendingChange,
    starts_at: datetime,
) -> Task:
    draft = TaskDraft(
        title="Daily",
        description=None,
        method=method,
        schedule=Schedule(
            starts_at=starts_at, rrule="FREQ=DAILY", timezone="UTC", window_seconds=3600, grace_seconds=60
        ),
        **rules,  # type: ignore[arg-type]
    )
    task = (
        await create_task_planned(owner, draft, min_interval_seconds=1, timing=TIMING, max_tasks=100)
    ).task
    # due in a day: far beyond every link horizon, so only this test applies it
    effective_at = await db_now() + timedelta(days=1)
    await Task.filter(id=task.id).update(pending_change=change.columns(), pending_effective_at=effective_at)
    return await Task.get(id=task.id)


async def _written(task_id: object) -> tuple[object, ...]:
    """Every column a change may write, on the task, its instances and their reminders; ids and the
    moment of writing aside."""
    task = await Task.get(id=task_id)
    instances = await TaskInstance.filter(task_id=task_id).order_by("seq")
    reminders = await InstanceReminder.filter(instance__task_id=task_id).order_by("remind_at", "anchor")
    return (
        (task.state, task.chain_version, task.last_seq, task.deleted_at is not None),
        (task.starts_at, task.rrule, task.timezone, task.window_seconds, task.grace_seconds),
        (task.count_ends_at, task.gps_latitude, task.gps_longitude, task.gps_radius_meters),
        (task.gps_max_accuracy_meters, task.video_min_duration_seconds),
        (task.review_window_seconds, task.review_on_timeout, task.pending_change, task.pending_effective_at),
        [(i.seq, i.chain_version, i.status, i.opens_at, i.due_at, i.closes_at) for i in instances],
        [(i.fire_at, i.link_no, i.link_for, i.settled_at is not None) for i in instances],
        [(r.anchor, r.offset_seconds, r.remind_at, r.fire_at, r.link_no) for r in reminders],
    )


@pytest.mark.usefixtures("orm")
async def test_a_set_writes_what_the_same_changes_write_one_by_one() -> None:
    owner = await _owner()
    starts_at = _tomorrow()  # one start for both twins: they differ only in how their changes apply
    as_set = {name: await _task(owner, *case, starts_at) for name, case in CASES.items()}
    one_by_one = {name: await _task(owner, *case, starts_at) for name, case in CASES.items()}
    due = await eventual_due_times(list(as_set.values()), TIMING)
    async with write_transaction():
        locked = [await lock_task(str(task.id)) for task in as_set.values()]
        await apply_pending_changes(locked, await db_now(), TIMING, due)
    for task in one_by_one.values():
        single = await eventual_due_times([task], TIMING)
        async with write_transaction():
            await apply_pending_change(
                await lock_task(str(task.id)), await db_now(), TIMING, single.get(str(task.id))
            )
    for name in CASES:
        assert await _written(as_set[name].id) == await _written(one_by_one[name].id), name
    # and what each wrote is the change: spot checks on the rows themselves
    states = {name: (await Task.get(id=task.id)).state for name, task in as_set.items()}
    assert states["pause"] is TaskState.PAUSED and states["shape then pause"] is TaskState.PAUSED
    assert states["one-off already past"] is TaskState.ENDED
    assert (await Task.get(id=as_set["delete"].id)).deleted_at is not None
    assert (await Task.get(id=as_set["radius alone"].id)).gps_radius_meters == 900.0
    assert (
        await Task.filter(id__in=[t.id for t in as_set.values()], pending_change__isnull=False).count() == 0
    )
    for name in (
        "geofence",
        "video",
        "partner review",
        "window and grace",
        "new shape",
        "new shape with reminders",
    ):
        pending = await TaskInstance.filter(task_id=as_set[name].id, status=InstanceStatus.PENDING).count()
        assert pending == 1, name  # still ACTIVE: exactly one PENDING instance
    rescheduled = await TaskInstance.get(
        task_id=as_set["new shape with reminders"].id, status=InstanceStatus.PENDING
    )
    assert await InstanceReminder.filter(instance_id=rescheduled.id).count() == len(REMINDERS)


@pytest.mark.usefixtures("orm")
async def test_a_row_another_transaction_holds_is_applied_once_it_is_free(db: asyncpg.Connection) -> None:
    owner = await _owner()
    starts_at = _tomorrow()
    tasks = [
        await _task(owner, VerificationMethod.PHOTO, {}, PendingChange(pause=True), starts_at)
        for _ in range(5)
    ]
    now = await db_now()
    await Task.filter(id__in=[t.id for t in tasks]).update(
        pending_effective_at=now - timedelta(milliseconds=5)
    )
    held = str(tasks[2].id)
    holder = db.transaction()
    await holder.start()
    await db.execute("SELECT id FROM tasks WHERE id = $1 FOR UPDATE", uuid.UUID(held))
    applying = asyncio.create_task(apply_changes_of([str(t.id) for t in tasks], TIMING))
    # the set skips the held row and applies the other four; the held one waits for its lock
    for _ in range(100):
        others = [t.id for t in tasks if str(t.id) != held]
        if await Task.filter(id__in=others, state=TaskState.PAUSED).count() == 4:
            break
        await asyncio.sleep(0.05)
    assert await Task.filter(id__in=others, state=TaskState.PAUSED).count() == 4
    assert not applying.done()
    assert (await Task.get(id=held)).state is TaskState.ACTIVE
    await holder.rollback()
    await asyncio.wait_for(applying, 10)
    assert (await Task.get(id=held)).state is TaskState.PAUSED
    counts = await TaskInstance.filter(
        task_id__in=[t.id for t in tasks], status=InstanceStatus.CANCELED
    ).count()
    assert counts == 5

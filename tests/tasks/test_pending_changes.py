"""A pending change that came due applies before any decision about its task: where proofs, reviews,
appeals and edits lock it (tasks.lock_with_due_change), and at a deadline, where the fire reports the
change and its delivery applies it before settling, even when the pump has not run yet. chain.lock_task
itself never edits."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from actors.chain_delivery import deliver
from models import InstanceStatus, Task, TaskInstance, TaskState, User, VerificationMethod
from rules.quota import Period, Quota
from rules.recurrence import Schedule
from services.chain.chain import ChainTiming, FireOutcome, fire, lock_task
from services.kit.db import db_now, write_transaction
from services.tasks.drafts import GpsRuleDraft, TaskDraft
from services.tasks.pending_changes import lock_with_due_change
from services.tasks.tasks import create_task_planned

TIMING = ChainTiming(link_horizon_seconds=0)  # nothing linked: this test fires by hand


async def _task(method: VerificationMethod, due_in: float, **rules: object) -> tuple[Task, TaskInstance]:
    user = await User.create(email=f"{uuid.uuid4().hex}@example.com", display_name="n", password_hash="x")
    due = (datetime.now(UTC) + timedelta(seconds=due_in)).replace(microsecond=0)
    draft = TaskDraft(
        title="Daily",
        description=None,
        method=method,
        schedule=Schedule(
            starts_at=due, rrule="FREQ=DAILY", timezone="UTC", window_seconds=60, grace_seconds=0
        ),
        **rules,  # type: ignore[arg-type]
    )
    task = (await create_task_planned(user, draft, min_interval_seconds=1, timing=TIMING, max_tasks=10)).task
    return task, await TaskInstance.get(task_id=task.id)


async def _hold(task: Task, change: dict[str, object], effective_at: datetime | None = None) -> None:
    """A pending change whose moment has just passed (as if the pump were late), or comes at `effective_at`."""
    when = effective_at or await db_now() - timedelta(milliseconds=10)
    await Task.filter(id=task.id).update(pending_change=change, pending_effective_at=when)


@pytest.mark.usefixtures("orm")
async def test_locking_to_decide_applies_a_due_rule_change_in_place() -> None:
    gps = GpsRuleDraft(latitude=52.52, longitude=13.405, radius_meters=150, max_accuracy_meters=100)
    task, instance = await _task(VerificationMethod.GPS, 600, gps=gps)
    await _hold(task, {"gps_radius_meters": 2000.0})
    async with write_transaction():
        plain = await lock_task(str(task.id))
        assert (plain.gps_radius_meters, plain.pending_change) == (150.0, {"gps_radius_meters": 2000.0})
        locked = await lock_with_due_change(str(task.id), TIMING)
    assert (locked.gps_radius_meters, locked.pending_change, locked.pending_effective_at) == (
        2000.0,
        None,
        None,
    )
    stored = await Task.get(id=task.id)
    assert (stored.gps_radius_meters, stored.pending_change) == (2000.0, None)
    # a rule change applies in place: the open instance stays
    assert (await TaskInstance.get(id=instance.id)).status is InstanceStatus.PENDING


@pytest.mark.usefixtures("orm")
async def test_the_fire_reports_a_due_pause_and_its_delivery_applies_it_before_settling() -> None:
    task, instance = await _task(VerificationMethod.PHOTO, 2)
    # due just before the deadline, held before it: a worker of this run that reaches the row first (its
    # pump sees it come due) must apply the pause first as well
    await _hold(task, {"pause": True}, instance.closes_at - timedelta(milliseconds=10))
    await asyncio.sleep((instance.closes_at - datetime.now(UTC)).total_seconds() + 0.2)
    outcome = await fire(str(instance.id), instance.link_no, TIMING)
    if outcome is FireOutcome.CHANGE_DUE:  # else a worker of this run delivered it first
        untouched = await TaskInstance.get(id=instance.id)
        assert (untouched.status, untouched.fire_at) == (InstanceStatus.PENDING, instance.fire_at)
        assert (await Task.get(id=task.id)).pending_change == {"pause": True}
        await deliver([(str(instance.id), instance.link_no)], TIMING)
    # paused first, so the deadline owes nothing: CANCELED, never MISSED
    assert (await TaskInstance.get(id=instance.id)).status is InstanceStatus.CANCELED
    stored = await Task.get(id=task.id)
    assert (stored.state, stored.pending_change) == (TaskState.PAUSED, None)


@pytest.mark.usefixtures("orm")
async def test_a_change_not_yet_due_waits_under_lock() -> None:
    task, _ = await _task(VerificationMethod.PHOTO, 600)
    await Task.filter(id=task.id).update(
        pending_change={"pause": True}, pending_effective_at=await db_now() + timedelta(hours=1)
    )
    async with write_transaction():
        locked = await lock_with_due_change(str(task.id), TIMING)
    assert (locked.state, locked.pending_change) == (TaskState.ACTIVE, {"pause": True})


@pytest.mark.usefixtures("orm")
async def test_a_waiting_lower_count_that_comes_due_verifies_a_period_already_holding_it() -> None:
    user = await User.create(email=f"{uuid.uuid4().hex}@example.com", display_name="n", password_hash="x")
    draft = TaskDraft(
        title="Gym",
        description=None,
        method=VerificationMethod.PHOTO,
        schedule=Schedule(
            starts_at=datetime.now(UTC),
            rrule=None,
            timezone="Europe/Berlin",
            window_seconds=0,
            grace_seconds=0,
        ),
        quota=Quota(3, Period.WEEK),
    )
    task = (await create_task_planned(user, draft, min_interval_seconds=1, timing=TIMING, max_tasks=10)).task
    week = await TaskInstance.get(task_id=task.id)
    await TaskInstance.filter(id=week.id).update(proofs_counted=2)
    await _hold(task, {"quota_count": 2, "quota_min_gap_seconds": 0})
    async with write_transaction():
        locked = await lock_with_due_change(str(task.id), TIMING)
    assert (locked.quota_count, locked.quota_min_gap_seconds, locked.pending_change) == (2, 0, None)
    assert (await TaskInstance.get(id=week.id)).status is InstanceStatus.VERIFIED
    following = await TaskInstance.get(task_id=task.id, status=InstanceStatus.PENDING)
    assert following.opens_at == week.due_at

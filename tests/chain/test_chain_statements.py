"""One fire costs the same number of SQL statements however many tasks its owner has (O(1) per link)."""

from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from harness.chain_support import photo_draft
from models import Event, EventType, InstanceStatus, Task, TaskInstance, User
from rules.quota import Period, Quota
from services.chain.chain import ChainTiming, FireOutcome, fire
from services.tasks.tasks import create_task_planned

NO_LINKS = ChainTiming(link_horizon_seconds=0)  # plan without sending: this test calls fire itself


class StatementCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.statements = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.statements += 1


async def _user_with_tasks(count: int, quota: Quota | None = None) -> Task:
    user = await User.create(email=f"{uuid.uuid4().hex}@example.com", display_name="n", password_hash="x")
    draft = photo_draft() if quota is None else replace(photo_draft(rrule=None), quota=quota)
    tasks = [
        (
            await create_task_planned(user, draft, min_interval_seconds=60, timing=NO_LINKS, max_tasks=count)
        ).task
        for _ in range(count)
    ]
    return tasks[0]


async def _statements_of_one_fire(task: Task) -> int:
    instance = await TaskInstance.get(task_id=task.id, status=InstanceStatus.PENDING)
    now = datetime.now(UTC)
    # due in a second long past, with a link of its own just sent: the run's worker leaves it to this test
    # (its fires gather the rows due in their own seconds, near now, and its pump resends only a link
    # PROOFLOOP_LINK_OVERDUE_SECONDS old)
    due = now.replace(microsecond=500_000) - timedelta(minutes=7)
    await TaskInstance.filter(id=instance.id).update(
        fire_at=due, link_for=due, linked_at=now, link_no=1, due_at=due, closes_at=due
    )
    counter = StatementCounter()
    logger = logging.getLogger("tortoise.db_client")
    previous = logger.level
    logger.addHandler(counter)
    logger.setLevel(logging.DEBUG)
    try:
        outcome = await fire(str(instance.id), 1, NO_LINKS)
    finally:
        logger.removeHandler(counter)
        logger.setLevel(previous)
    assert outcome is FireOutcome.MISSED
    return counter.statements


@pytest.mark.usefixtures("orm")
async def test_a_fire_runs_as_many_statements_for_1_task_as_for_500() -> None:
    lone = await _user_with_tasks(1)
    busy = await _user_with_tasks(500)
    few, many = await _statements_of_one_fire(lone), await _statements_of_one_fire(busy)
    assert few == many
    assert few > 3  # it did read, settle, record and plan
    for task in (lone, busy):
        assert await TaskInstance.filter(task_id=task.id, status=InstanceStatus.PENDING).count() == 1
        assert await Event.filter(task_id=task.id, type=EventType.MISSED).count() == 1


@pytest.mark.usefixtures("orm")
async def test_a_quota_goals_fire_costs_what_a_fixed_schedules_does_for_1_goal_or_500() -> None:
    fixed = await _statements_of_one_fire(await _user_with_tasks(1))
    goal = Quota(count=3, period=Period.WEEK)
    lone, busy = await _user_with_tasks(1, goal), await _user_with_tasks(500, goal)
    few, many = await _statements_of_one_fire(lone), await _statements_of_one_fire(busy)
    assert few == many
    assert few == fixed
    for task in (lone, busy):
        planned = await TaskInstance.get(task_id=task.id, status=InstanceStatus.PENDING)
        assert planned.closes_at == planned.due_at and planned.proofs_counted == 0

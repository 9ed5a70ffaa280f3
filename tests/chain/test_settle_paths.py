"""The row path (chain.fire) and the set path (one statement for many rows) are two writings of one rule:
settled the same way, identical tasks must end with identical instances, tasks and events."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.chain_support import photo_draft
from models import InstanceStatus, Task, TaskInstance, User
from services.chain.batch import settle_chunk
from services.chain.chain import ChainTiming, fire
from services.tasks.tasks import create_task_planned

NO_LINKS = ChainTiming(link_horizon_seconds=0)
# what names a row or stamps the moment it was written, not what the rule decided
_IDENTITY = {"id", "task_id", "instance_id", "user_id", "created_at", "updated_at", "occurred_at", "position"}
_MOMENT = {"settled_at"}


async def _identical_tasks(rrule: str | None, count: int) -> list[Task]:
    user = await User.create(email=f"{uuid.uuid4().hex}@example.com", display_name="n", password_hash="x")
    draft = photo_draft(title="Paths", rrule=rrule)
    return [
        (
            await create_task_planned(user, draft, min_interval_seconds=60, timing=NO_LINKS, max_tasks=count)
        ).task
        for _ in range(count)
    ]


async def _bring_due(tasks: list[Task], at: datetime) -> list[str]:
    """Each task as if it had started at `at`: its first instance due then, with link 1 sent, as the
    pump reads it, an hour from now: the run's worker pumps this database too, and a link sent longer
    ago than PROOFLOOP_LINK_OVERDUE_SECONDS would be taken as lost and resent between the two paths."""
    ids = []
    linked_at = datetime.now(UTC) + timedelta(hours=1)  # one instant: the rows compare equal
    for task in tasks:
        await Task.filter(id=task.id).update(starts_at=at)
        instance = await TaskInstance.get(task_id=task.id, status=InstanceStatus.PENDING)
        opens_at = at - timedelta(seconds=task.window_seconds)
        await TaskInstance.filter(id=instance.id).update(
            opens_at=opens_at,
            due_at=at,
            closes_at=at,
            fire_at=at,
            link_no=1,
            link_for=at,
            linked_at=linked_at,
        )
        ids.append(str(instance.id))
    return ids


def _decided(row: asyncpg.Record) -> dict[str, Any]:
    values = {k: v for k, v in dict(row).items() if k not in _IDENTITY}
    for key in _MOMENT & values.keys():
        values[key] = values[key] is not None
    return values


async def _written(db: asyncpg.Connection, task: Task) -> dict[str, Any]:
    """What settling wrote for the task: its instances by seq, its row and its events in order."""
    instances = await db.fetch("SELECT * FROM task_instances WHERE task_id = $1 ORDER BY seq", task.id)
    row = await db.fetchrow(
        "SELECT state, last_seq, chain_version, pending_change FROM tasks WHERE id = $1", task.id
    )
    events = await db.fetch(
        "SELECT e.*, i.seq AS instance_seq FROM events e JOIN task_instances i ON i.id = e.instance_id"
        " WHERE e.task_id = $1 ORDER BY e.id",
        task.id,
    )
    return {
        "instances": [_decided(r) for r in instances],
        "task": dict(row) if row else None,
        "events": [_decided(r) for r in events],
    }


@pytest.mark.parametrize(("rrule", "outcome"), [("FREQ=DAILY", "ACTIVE"), (None, "ENDED")])
@pytest.mark.usefixtures("orm")
async def test_the_row_path_and_the_set_path_write_identical_rows_and_events(
    db: asyncpg.Connection, rrule: str | None, outcome: str
) -> None:
    by_row, *by_set = await _identical_tasks(rrule, 3)
    # a whole second of its own, already past, so both paths find the rows due
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=5)
    row_id, *set_ids = await _bring_due([by_row, *by_set], at)

    await fire(row_id, 1, NO_LINKS)
    chunk = await settle_chunk([(i, 1) for i in set_ids], [], NO_LINKS)
    assert chunk.settled == 2 and not chunk.leftover  # the set path did settle them, in one transaction

    expected = await _written(db, by_row)
    assert expected["task"]["state"] == outcome
    planned = [(i["seq"], i["status"], i["due_at"]) for i in expected["instances"]]
    nxt = [(2, "PENDING", at + timedelta(days=1))] if outcome == "ACTIVE" else []
    assert planned == [(1, "MISSED", at), *nxt]
    assert [(e["type"], e["instance_status"], e["due_at"]) for e in expected["events"]] == [
        ("MISSED", "MISSED", at)
    ]
    for task in by_set:
        assert await _written(db, task) == expected


@pytest.mark.usefixtures("orm")
async def test_a_late_settlement_records_the_occurrences_it_passed_over_the_same_on_both_paths(
    db: asyncpg.Connection,
) -> None:
    """Settled 3.5 hours late (an outage), an hourly task's occurrences due meanwhile had no instance:
    each is recorded EXCUSED (reason SERVICE_OUTAGE) with its event, and the next is the first still
    ahead; the open one, whose window was usable, is MISSED."""
    by_row, *by_set = await _identical_tasks("FREQ=HOURLY", 3)
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=3, minutes=30)
    row_id, *set_ids = await _bring_due([by_row, *by_set], at)

    await fire(row_id, 1, NO_LINKS)
    chunk = await settle_chunk([(i, 1) for i in set_ids], [], NO_LINKS)
    assert chunk.settled == 2 and not chunk.leftover

    expected = await _written(db, by_row)
    hour = timedelta(hours=1)
    assert [(i["seq"], i["status"], i["verdict_reason"], i["due_at"]) for i in expected["instances"]] == [
        (1, "MISSED", "NO_PROOF", at),
        (2, "EXCUSED", "SERVICE_OUTAGE", at + hour),
        (3, "EXCUSED", "SERVICE_OUTAGE", at + 2 * hour),
        (4, "EXCUSED", "SERVICE_OUTAGE", at + 3 * hour),
        (5, "PENDING", None, at + 4 * hour),
    ]
    assert [i["rule_revision"] for i in expected["instances"]] == [1, None, None, None, None]
    assert expected["task"]["last_seq"] == 5
    assert [(e["type"], e["instance_seq"]) for e in expected["events"]] == [
        ("MISSED", 1),
        ("EXCUSED", 2),
        ("EXCUSED", 3),
        ("EXCUSED", 4),
    ]
    for task in by_set:
        assert await _written(db, task) == expected


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rrule=st.sampled_from(
        [
            "FREQ=HOURLY",
            "FREQ=HOURLY;INTERVAL=2",
            "FREQ=MINUTELY;INTERVAL=90",
            "FREQ=DAILY",
            "FREQ=DAILY;COUNT=4",
        ]
    ),
    late_minutes=st.integers(min_value=0, max_value=5 * 24 * 60),
)
@pytest.mark.usefixtures("orm")
async def test_the_two_paths_agree_on_generated_tasks_settled_on_time_or_late(
    db: asyncpg.Connection, rrule: str, late_minutes: int
) -> None:
    """services/chain/planning.py written down twice, as rows and as set statements: for any schedule and
    any lateness, identical tasks end with identical instances (the MISSED one, those passed over, the
    next or an END), tasks and events."""
    by_row, *by_set = await _identical_tasks(rrule, 2)
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=late_minutes, seconds=5)
    row_id, *set_ids = await _bring_due([by_row, *by_set], at)

    await fire(row_id, 1, NO_LINKS)
    chunk = await settle_chunk([(i, 1) for i in set_ids], [], NO_LINKS)
    assert chunk.settled == 1 and not chunk.leftover

    expected = await _written(db, by_row)
    statuses = [i["status"] for i in expected["instances"]]
    assert statuses[0] == "MISSED" and set(statuses[1:-1]) <= {"EXCUSED"}, statuses
    assert statuses[-1] in ("PENDING", "EXCUSED", "MISSED"), statuses
    assert [i["seq"] for i in expected["instances"]] == list(range(1, len(statuses) + 1))
    for task in by_set:
        assert await _written(db, task) == expected

"""Progress through the real API: figures of a known history, who may read them, the limits.

The history is written as rows before each task's open instance (the read is under test here, not the
chain that settles instances; the chain's own tests cover that).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    create_open_task,
    free_port,
    partner_pair,
    row_key,
)
from services.kit.ids import global_id
from tests.support.backends import Deployment, both_backends
from tests.support.read_statements import counted

# (days ago, status) of task A, oldest first; each is due that many days and one hour before now
HISTORY_A = [
    (40, "MISSED"),
    (20, "VERIFIED"),
    (10, "VERIFIED"),
    (9, "VERIFIED"),
    (8, "REJECTED"),
    (6, "VERIFIED"),
    (5, "CANCELED"),
    (4, "VERIFIED"),
    (3, "MISSED"),
    (2, "VERIFIED"),
    (1, "VERIFIED"),
]


PROGRESS = """fragment P on Progress {
  r7: completionRate(days: 7) r30: completionRate(days: 30) r90: completionRate(days: 90)
  c7: completion(days: 7) { days verified settled rate }
  currentStreak bestStreak
  calendar(from: $from, to: $to) { date verified missed rejected canceled open instances { id status } }
}"""


USER_PROGRESS = "query($u: ID, $from: Date!, $to: Date!) { progress(userId: $u) { ...P } }\n" + PROGRESS


@dataclass(frozen=True)
class Written:
    id: str
    due: datetime
    status: str


def expected_calendar(rows: list[Written], first: date, last: date) -> list[dict[str, Any]]:
    by_day: dict[date, list[Written]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r.due, r.id)):  # the API's order: due time, then id
        by_day[row.due.date()].append(row)  # the tasks are in UTC
    days = []
    for n in range((last - first).days + 1):
        day = first + timedelta(days=n)
        entries = by_day.get(day, [])

        def count(*statuses: str, entries: list[Written] = entries) -> int:
            return sum(1 for e in entries if e.status in statuses)

        days.append(
            {
                "date": day.isoformat(),
                "verified": count("VERIFIED"),
                "missed": count("MISSED"),
                "rejected": count("REJECTED"),
                "canceled": count("CANCELED"),
                "open": count("PENDING", "PENDING_REVIEW"),
                "instances": [{"id": global_id("TaskInstance", e.id), "status": e.status} for e in entries],
            }
        )
    return days


# task B of the same owner: due two hours after A's on the same days, so the user's order interleaves
HISTORY_B = [(3, "VERIFIED"), (0.5, "VERIFIED")]

TASK_PROGRESS = (
    "query($id: ID!, $from: Date!, $to: Date!) { task(id: $id) { streak progress { ...P } } }\n" + PROGRESS
)


@pytest.fixture
def api(deployment: Deployment) -> ApiClient:
    return deployment.client()


async def write_history(
    deployment: Deployment, task_id: str, history: Sequence[tuple[float, str]], shift: timedelta
) -> list[Written]:
    """Settled rows before the task's open instance (seq 0), as the chain would have left them."""
    now = datetime.now(UTC)
    rows = [
        Written(str(uuid.uuid4()), now - timedelta(days=ago, hours=1) + shift, status)
        for ago, status in history
    ]
    await deployment.sql_many(
        "INSERT INTO task_instances (id, task_id, seq, chain_version, opens_at, due_at, closes_at,"
        " status, settled_at, created_at, link_no, proofs_counted)"
        " VALUES ($1, $2, $3, 1, $4, $4, $4, $5, $4, $6, 0, 0)",
        [(row.id, row_key(task_id), n - len(rows), row.due, row.status, now) for n, row in enumerate(rows)],
    )
    return rows


async def start_partnerships_at(deployment: Deployment, owner_id: str, at: datetime) -> None:
    """Move the start of the owner's partnerships back, as if the partners had watched since `at`."""
    await deployment.sql(
        "UPDATE partnerships SET responded_at = $1 WHERE user_id = $2", at, row_key(owner_id)
    )


async def open_written(api: ApiClient, token: str, task_id: str, instance_id: str) -> Written:
    data = await api.execute(
        "query($id: ID!) { instance(id: $id) { dueAt status } }", {"id": instance_id}, token=token
    )
    due = datetime.fromisoformat(data["instance"]["dueAt"]).astimezone(UTC)
    return Written(row_key(instance_id), due, data["instance"]["status"])


@both_backends
async def test_owner_and_partner_read_the_figures_of_a_known_history(
    api: ApiClient, deployment: Deployment
) -> None:
    owner, owner_id, partner, _ = await partner_pair(api)
    stranger, _ = await api.register()
    task_a, open_a = await create_open_task(api, owner, "PHOTO")
    task_b, open_b = await create_open_task(api, owner, "PHOTO")
    task_c, _ = await create_open_task(api, owner, "PHOTO")
    rows_a = await write_history(deployment, task_a, HISTORY_A, timedelta())
    rows_b = await write_history(deployment, task_b, HISTORY_B, timedelta(hours=2))
    # a deleted task's misses count for nobody: the owner and the partners read the same figures
    await write_history(deployment, task_c, [(1, "MISSED"), (0.2, "MISSED")], timedelta())
    await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_c}, token=owner)
    rows_a.append(await open_written(api, owner, task_a, open_a))
    rows_b.append(await open_written(api, owner, task_b, open_b))

    today = datetime.now(UTC).date()
    first, last = today - timedelta(days=11), today + timedelta(days=1)
    span = {"from": first.isoformat(), "to": last.isoformat()}

    # the partnership began just now: of the history, a partner reads only what was still open then
    fresh = (await api.execute(USER_PROGRESS, {"u": owner_id, **span}, token=partner))["progress"]
    assert (fresh["r90"], fresh["currentStreak"], fresh["bestStreak"]) == (None, 0, 0)
    assert {i["id"] for day in fresh["calendar"] for i in day["instances"]} == {open_a, open_b}
    fresh_task = (await api.execute(TASK_PROGRESS, {"id": task_a, **span}, token=partner))["task"]
    assert (fresh_task["progress"]["r90"], fresh_task["progress"]["bestStreak"]) == (None, 0)
    await start_partnerships_at(deployment, owner_id, datetime.now(UTC) - timedelta(days=100))

    for token in (owner, partner):
        task = (await api.execute(TASK_PROGRESS, {"id": task_a, **span}, token=token))["task"]
        progress = task["progress"]
        # 7 days: V V M V V (the CANCELED one neither counts nor breaks); 30: + V V V R; 90: + M
        assert (progress["r7"], progress["r30"], progress["r90"]) == (4 / 5, 7 / 9, 7 / 10)
        assert progress["c7"] == {"days": 7, "verified": 4, "settled": 5, "rate": 4 / 5}
        assert (progress["currentStreak"], progress["bestStreak"]) == (2, 3)
        assert task["streak"] == progress["currentStreak"]
        assert progress["calendar"] == expected_calendar(rows_a, first, last)

        user = (await api.execute(USER_PROGRESS, {"u": owner_id, **span}, token=token))["progress"]
        assert (user["r7"], user["r30"], user["r90"]) == (6 / 7, 9 / 11, 9 / 12)
        # by due time across both tasks: A's miss 3 days ago, then B, A, A, B verified
        assert (user["currentStreak"], user["bestStreak"]) == (4, 4)
        assert user["calendar"] == expected_calendar(rows_a + rows_b, first, last)

    mine = (await api.execute(USER_PROGRESS, span, token=owner))["progress"]
    assert mine == (await api.execute(USER_PROGRESS, {"u": owner_id, **span}, token=partner))["progress"]

    with pytest.raises(GraphQLFailure) as refused:
        await api.execute(USER_PROGRESS, {"u": owner_id, **span}, token=stranger)
    assert refused.value.code == "NOT_FOUND"
    assert (await api.execute(TASK_PROGRESS, {"id": task_a, **span}, token=stranger))["task"] is None
    assert (await api.execute(TASK_PROGRESS, {"id": task_c, **span}, token=partner))["task"] is None
    empty = (await api.execute(USER_PROGRESS, span, token=stranger))["progress"]
    assert (empty["r7"], empty["currentStreak"], empty["bestStreak"]) == (None, 0, 0)
    assert all(day["instances"] == [] for day in empty["calendar"])


async def expect_bad_input(
    api: ApiClient, token: str, variables: dict[str, Any], document: str
) -> str | None:
    with pytest.raises(GraphQLFailure) as refused:
        await api.execute(document, variables, token=token)
    assert refused.value.code == "BAD_USER_INPUT"
    return refused.value.field


async def test_ranges_outside_the_limits_are_bad_input(api: ApiClient, deployment: Deployment) -> None:
    token, _ = await api.register()
    task_id, _ = await create_open_task(api, token, "PHOTO")
    today = datetime.now(UTC).date()
    calendar = "query($from: Date!, $to: Date!) { progress { calendar(from: $from, to: $to) { date } } }"
    rate = "query($d: Int!) { progress { completionRate(days: $d) } }"

    def span(days: int) -> dict[str, str]:
        return {"from": today.isoformat(), "to": (today + timedelta(days=days)).isoformat()}

    assert len((await api.execute(calendar, span(91), token=token))["progress"]["calendar"]) == 92
    assert await expect_bad_input(api, token, span(92), calendar) == "to"
    assert await expect_bad_input(api, token, span(-1), calendar) == "to"
    # far from any schedule, and near the ends of the calendar where the zone margins would overflow
    assert await expect_bad_input(api, token, {"from": "0001-01-01", "to": "0001-01-02"}, calendar) == "from"
    # 9999-12-31 is past the last Date (the scalar refuses it before the range rule reads `from`)
    assert await expect_bad_input(api, token, {"from": "9999-12-30", "to": "9999-12-31"}, calendar) == "to"
    assert await expect_bad_input(api, token, {"from": "9999-12-29", "to": "9999-12-30"}, calendar) == "from"
    assert await expect_bad_input(api, token, {"from": "2200-12-31", "to": "9999-12-31"}, calendar) == "to"
    assert await expect_bad_input(api, token, {"from": "2026-02-30", "to": "2026-03-01"}, calendar) == "from"
    assert (await api.execute(rate, {"d": 366}, token=token))["progress"]["completionRate"] is None
    for days in (0, -7, 367):
        assert await expect_bad_input(api, token, {"d": days}, rate) == "days"

    # more instances in a range than a calendar holds: ask a shorter range
    crowded = [(0.5 + n / 100_000, "VERIFIED") for n in range(2001)]
    await write_history(deployment, task_id, crowded, timedelta())
    recent = {"from": (today - timedelta(days=1)).isoformat(), "to": today.isoformat()}
    assert await expect_bad_input(api, token, recent, calendar) == "from"
    many = (await api.execute(rate, {"d": 1}, token=token))["progress"]["completionRate"]
    assert many == 1.0


@pytest.fixture(scope="module")
def counting_server(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess({**service_env, "PROOFLOOP_COUNT_STATEMENTS": "true"}, port=free_port()) as proc:
        yield proc


TASKS_PROGRESS = """query($from: Date!, $to: Date!) { tasks(first: 10) { edges { node { id progress {
  r7: completionRate(days: 7) r30: completionRate(days: 30) currentStreak bestStreak
  calendar(from: $from, to: $to) { date verified instances { id status dueAt } }
} } } } }"""


async def test_progress_of_10_tasks_costs_the_statements_of_1(
    counting_server: ServerProcess, deployment: Deployment
) -> None:
    counting = ApiClient(counting_server.url)
    today = datetime.now(UTC).date()
    span = {"from": (today - timedelta(days=7)).isoformat(), "to": today.isoformat()}
    one, _ = await counting.register()
    ten, _ = await counting.register()
    await create_open_task(counting, one, "PHOTO")
    task_ids = [(await create_open_task(counting, ten, "PHOTO"))[0] for _ in range(10)]
    await write_history(deployment, task_ids[0], HISTORY_A, timedelta())

    data_one, statements_one = await counted(counting.url, TASKS_PROGRESS, one, **span)
    data_ten, statements_ten = await counted(counting.url, TASKS_PROGRESS, ten, **span)
    assert len(data_one["tasks"]["edges"]) == 1 and len(data_ten["tasks"]["edges"]) == 10
    # session, clock, the viewer's access, page, completion, streaks, calendar, the instances' tasks
    assert statements_one == statements_ten <= 9
    progress = {e["node"]["id"]: e["node"]["progress"] for e in data_ten["tasks"]["edges"]}
    assert (progress[task_ids[0]]["r7"], progress[task_ids[0]]["currentStreak"]) == (4 / 5, 2)
    assert all(p["r7"] is None and p["bestStreak"] == 0 for k, p in progress.items() if k != task_ids[0])

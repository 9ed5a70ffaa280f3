"""Planned breaks through the real API: the occurrences due inside a break are not planned (an open one
is canceled at once), so they are never MISSED and a streak survives; under a commitment horizon a break
applies only from the horizon's end; ending one early applies at once; partners see breaks.

The API here has 4-second horizon days (PROOFLOOP_COMMITMENT_HORIZON_DAY_SECONDS), so a one-day horizon
ends moments after a break is scheduled and the chain can be watched planning around it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from harness.chain_support import eventually
from harness.proofloop import ApiClient, GraphQLFailure, create_open_task, open_schedule, partner_pair
from tests.support.backends import Backend, Deployment, both_backends, deployed

DAY_SECONDS = 4
BREAK = "id startsOn endsOn appliesFrom endsAt endedEarly task { id }"
SCHEDULE = f"mutation($in: ScheduleBreakInput!) {{ scheduleBreak(input: $in) {{ {BREAK} }} }}"
END = f"mutation($id: ID!) {{ endBreak(id: $id) {{ {BREAK} }} }}"
TASK = f"""query($id: ID!) {{ task(id: $id) {{ streak upcoming(first: 3) breaks {{ {BREAK} }}
  currentInstance {{ id status dueAt }} progress {{ completion(days: 7) {{ verified settled }} }}
  instances(first: 10) {{ edges {{ node {{ id status dueAt }} }} }} }} }}"""
CHECK_IN = """mutation($id: ID!) { checkIn(instanceId: $id, location: {latitude: 52.52, longitude: 13.405},
  accuracyMeters: 10) { status instance { status } } }"""
HORIZON = "mutation($d: Int!) { setCommitmentHorizon(days: $d) { id } }"


@pytest.fixture(scope="module")
def breaks(request: pytest.FixtureRequest, backend: Backend) -> Iterator[Deployment]:
    with deployed(
        request, backend, {"PROOFLOOP_COMMITMENT_HORIZON_DAY_SECONDS": str(DAY_SECONDS)}
    ) as running:
        yield running


@pytest.fixture
def api(breaks: Deployment) -> ApiClient:
    return breaks.client()


async def task_view(api: ApiClient, token: str, task_id: str) -> dict[str, Any]:
    task: dict[str, Any] = (await api.execute(TASK, {"id": task_id}, token=token))["task"]
    return task


def due_of(instance: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(instance["dueAt"])


def day_in(at: datetime, zone: str = "UTC") -> date:
    return at.astimezone(ZoneInfo(zone)).date()


async def schedule(api: ApiClient, token: str, starts: date, ends: date, task_id: str | None) -> list[Any]:
    variables = {"in": {"taskId": task_id, "startsOn": starts.isoformat(), "endsOn": ends.isoformat()}}
    breaks: list[Any] = (await api.execute(SCHEDULE, variables, token=token))["scheduleBreak"]
    return breaks


def every_three_seconds() -> dict[str, Any]:
    """A schedule due every 3 s from 2 s on, a second of window and no grace: a deadline to watch."""
    starts = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
    return {
        "startsAt": starts.isoformat(),
        "rrule": "FREQ=SECONDLY;INTERVAL=3",
        "timezone": "UTC",
        "windowSeconds": 1,
        "graceSeconds": 0,
    }


@both_backends
async def test_a_break_cancels_the_open_instance_inside_it_and_the_streak_survives(api: ApiClient) -> None:
    owner, _, partner, _ = await partner_pair(api)
    task_id, first_id = await create_open_task(api, owner, "GPS", open_schedule(starts_in_seconds=120))
    assert (await api.execute(CHECK_IN, {"id": first_id}, token=owner))["checkIn"]["status"] == "ACCEPTED"
    before = await task_view(api, owner, task_id)
    second = before["currentInstance"]
    assert before["streak"] == 1

    # the second occurrence's day and the next: both off
    off = day_in(due_of(second))
    [made] = await schedule(api, owner, off, off + timedelta(days=1), task_id)
    assert made["endedEarly"] is False and made["task"]["id"] == task_id
    after = await task_view(api, owner, task_id)
    statuses = {e["node"]["id"]: e["node"]["status"] for e in after["instances"]["edges"]}
    assert statuses[second["id"]] == "CANCELED"
    assert due_of(after["currentInstance"]) == due_of(second) + timedelta(days=2)
    # the schedule's next due times from now (the first, proved early, is still ahead), the break's left out
    assert [datetime.fromisoformat(t) for t in after["upcoming"]] == [
        due_of(second) + timedelta(days=d) for d in (-1, 2, 3)
    ]
    assert after["streak"] == 1  # a canceled occurrence neither extends nor breaks it
    assert after["progress"]["completion"] == before["progress"]["completion"]
    # partners see the break
    assert [b["id"] for b in (await task_view(api, partner, task_id))["breaks"]] == [made["id"]]


@both_backends
async def test_a_task_with_a_break_ahead_is_settled_at_each_deadline_and_keeps_its_chain(
    api: ApiClient,
) -> None:
    token, _ = await api.register()
    # every 3 s, with a break tomorrow: each instance is MISSED at its deadline and the next planned
    rule = every_three_seconds()
    task_id, first_id = await create_open_task(api, token, "GPS", rule)
    tomorrow = day_in(datetime.now(UTC)) + timedelta(days=1)
    await schedule(api, token, tomorrow, tomorrow, task_id)

    async def missed_and_planned() -> bool:
        view = await task_view(api, token, task_id)
        statuses = {e["node"]["id"]: e["node"]["status"] for e in view["instances"]["edges"]}
        return statuses.get(first_id) == "MISSED" and view["currentInstance"]["id"] != first_id

    await eventually(missed_and_planned, 20, "the worker settled the instance and planned the next")


async def test_under_a_horizon_a_break_applies_from_the_horizons_end(api: ApiClient) -> None:
    token, _ = await api.register()
    # every 3 s: the open instance is due inside the horizon (one 4 s day) and the next ones after it
    rule = every_three_seconds()
    task_id, _ = await create_open_task(api, token, "GPS", rule)
    await api.execute(HORIZON, {"d": 1}, token=token)
    today = day_in(datetime.now(UTC))
    [made] = await schedule(api, token, today, today + timedelta(days=1), task_id)
    applies_from, ends_at = (
        datetime.fromisoformat(made["appliesFrom"]),
        datetime.fromisoformat(made["endsAt"]),
    )
    assert applies_from > datetime.fromisoformat(f"{today.isoformat()}T00:00:00+00:00")  # clipped

    async def planned_past_the_horizon() -> bool:
        current = (await task_view(api, token, task_id))["currentInstance"]
        return current is not None and due_of(current) >= applies_from

    # nobody proves them: each instance due before the horizon's end was promised, so it stays due and is
    # MISSED (however many a loaded machine lets pass before the break is scheduled); then the chain
    # plans past the break
    await eventually(planned_past_the_horizon, 40, "the chain planned past the break")
    view = await task_view(api, token, task_id)
    instances = [(due_of(e["node"]), e["node"]["status"]) for e in view["instances"]["edges"]]
    assert due_of(view["currentInstance"]) >= ends_at
    promised = [status for due, status in instances if due < applies_from]
    assert promised and set(promised) == {"MISSED"}
    assert [due for due, _ in instances if applies_from <= due < ends_at] == []  # nothing inside the break


async def test_ending_a_break_early_applies_at_once_even_under_a_horizon(api: ApiClient) -> None:
    token, _ = await api.register()
    task_id, _ = await create_open_task(api, token, "GPS", open_schedule(starts_in_seconds=600))
    first_due = due_of((await task_view(api, token, task_id))["currentInstance"])
    off = day_in(first_due)
    [made] = await schedule(api, token, off, off + timedelta(days=5), task_id)
    assert due_of((await task_view(api, token, task_id))["currentInstance"]) == first_due + timedelta(days=6)

    await api.execute(HORIZON, {"d": 3}, token=token)
    ended = (await api.execute(END, {"id": made["id"]}, token=token))["endBreak"]
    assert ended["endedEarly"] is True
    view = await task_view(api, token, task_id)
    assert due_of(view["currentInstance"]) == first_due  # due again at once
    assert view["breaks"] == []


async def test_a_break_for_every_task_reads_its_days_in_each_tasks_zone(api: ApiClient) -> None:
    token, _ = await api.register()
    ids = []
    for zone in ("Europe/Berlin", "America/New_York"):
        task_id, _ = await create_open_task(api, token, "GPS", {**open_schedule(600), "timezone": zone})
        ids.append(task_id)
    starts = date.today() + timedelta(days=10)
    made = await schedule(api, token, starts, starts + timedelta(days=2), None)
    assert sorted(b["task"]["id"] for b in made) == sorted(ids)
    by_task = {b["task"]["id"]: datetime.fromisoformat(b["appliesFrom"]) for b in made}
    assert by_task[ids[1]] - by_task[ids[0]] == timedelta(hours=6)  # midnight in New York is 6 h later


async def test_bad_input_and_other_peoples_tasks_are_refused(api: ApiClient) -> None:
    owner, _, partner, _ = await partner_pair(api)
    stranger, _ = await api.register()
    task_id, _ = await create_open_task(api, owner, "GPS", open_schedule(600))
    soon = date.today() + timedelta(days=30)
    cases = [
        (owner, soon, soon - timedelta(days=1), "BAD_USER_INPUT", "input.endsOn"),
        (owner, soon, soon + timedelta(days=366), "BAD_USER_INPUT", "input.endsOn"),
        (owner, date(2020, 1, 1), date(2020, 1, 2), "BAD_USER_INPUT", "input.endsOn"),  # over already
        (partner, soon, soon, "FORBIDDEN", None),
        (stranger, soon, soon, "NOT_FOUND", None),
    ]
    for token, starts, ends, code, field in cases:
        with pytest.raises(GraphQLFailure) as refused:
            await schedule(api, token, starts, ends, task_id)
        assert (refused.value.code, refused.value.field) == (code, field)
    assert (await task_view(api, owner, task_id))["breaks"] == []

    for n in range(10):
        await schedule(api, owner, soon + timedelta(days=2 * n), soon + timedelta(days=2 * n), task_id)
    with pytest.raises(GraphQLFailure) as full:
        await schedule(api, owner, soon + timedelta(days=40), soon + timedelta(days=40), task_id)
    assert full.value.code == "CONFLICT"
    made = (await task_view(api, owner, task_id))["breaks"]
    with pytest.raises(GraphQLFailure) as not_yours:
        await api.execute(END, {"id": made[0]["id"]}, token=partner)
    assert not_yours.value.code == "FORBIDDEN"

"""The profile through the real API: the display name partners see, the zone new tasks default to, and
moving tasks with the user, which is a schedule edit under the commitment horizon like any other."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from harness.proofloop import ApiClient, GraphQLFailure, partner_pair, task_rules
from tests.support.proofs_gps import check_in

ME = "query { me { displayName timezone } }"
TASK_FIELDS = """id schedule { startsAt timezone } currentInstance { dueAt }
  pendingChange { effectiveAt schedule { startsAt timezone } }"""
PROFILE = f"""mutation($name: String, $tz: String, $move: Boolean! = false) {{
  updateProfile(displayName: $name, timezone: $tz, moveTasks: $move) {{
    user {{ displayName timezone }}
    movedTasks {{ {TASK_FIELDS} }}
    unmovedTasks {{ task {{ id }} code message }}
  }}
}}"""
CREATE = f"mutation($input: CreateTaskInput!) {{ createTask(input: $input) {{ {TASK_FIELDS} }} }}"
TASK = f"query($id: ID!) {{ task(id: $id) {{ {TASK_FIELDS} }} }}"
HORIZON = "mutation($days: Int!) { setCommitmentHorizon(days: $days) { id } }"
BERLIN, NEW_YORK, TOKYO = "Europe/Berlin", "America/New_York", "Asia/Tokyo"


def seven_tomorrow(zone: str) -> datetime:
    """07:00 tomorrow, wall time in `zone`."""
    local = datetime.now(ZoneInfo(zone)) + timedelta(days=1)
    return local.replace(hour=7, minute=0, second=0, microsecond=0)


def daily_at_seven(zone: str | None, title: str = "Gym") -> dict[str, Any]:
    schedule: dict[str, Any] = {"startsAt": seven_tomorrow(zone or BERLIN).isoformat(), "rrule": "FREQ=DAILY"}
    if zone is not None:
        schedule["timezone"] = zone
    return {"title": title, "method": "PHOTO", "schedule": schedule}


def instant(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def wall(value: str, zone: str) -> tuple[int, int]:
    local = instant(value).astimezone(ZoneInfo(zone))
    return local.hour, local.minute


async def create(api: ApiClient, token: str, task_input: dict[str, Any]) -> dict[str, Any]:
    task: dict[str, Any] = (await api.execute(CREATE, {"input": task_input}, token=token))["createTask"]
    return task


async def profile(api: ApiClient, token: str, **variables: Any) -> dict[str, Any]:
    result: dict[str, Any] = (await api.execute(PROFILE, variables, token=token))["updateProfile"]
    return result


async def test_name_and_zone_change_and_a_new_task_defaults_to_the_new_zone(api: ApiClient) -> None:
    owner_token, _, partner_token, _ = await partner_pair(api)
    changed = await profile(api, owner_token, name="  Ana Lima  ", tz=BERLIN)
    assert changed["user"] == {"displayName": "Ana Lima", "timezone": BERLIN}
    assert changed["movedTasks"] == [] and changed["unmovedTasks"] == []
    assert (await api.execute(ME, token=owner_token))["me"] == {"displayName": "Ana Lima", "timezone": BERLIN}
    # a task that names no zone is read in the profile's
    task = await create(api, owner_token, daily_at_seven(None))
    assert task["schedule"]["timezone"] == BERLIN
    assert wall(task["currentInstance"]["dueAt"], BERLIN) == (7, 0)
    # the partner sees the new name, and still no zone of the owner's
    watched = await api.execute(
        "query { partnerships { user { displayName timezone } } }", token=partner_token
    )
    assert watched["partnerships"] == [{"user": {"displayName": "Ana Lima", "timezone": ""}}]


async def test_a_later_field_of_the_same_document_sees_the_new_zone(api: ApiClient) -> None:
    token, _ = await api.register()
    data = await api.execute(
        """mutation($input: CreateTaskInput!) {
             updateProfile(timezone: "Asia/Tokyo") { user { timezone } }
             createTask(input: $input) { schedule { timezone } }
           }""",
        {"input": daily_at_seven(None)},
        token=token,
    )
    assert data["createTask"]["schedule"]["timezone"] == TOKYO


@pytest.mark.parametrize(
    ("variables", "field"),
    [
        ({"name": "Renamed", "tz": "Mars/Olympus_Mons"}, "timezone"),
        ({"name": "   ", "tz": TOKYO}, "displayName"),
        ({"name": "x" * 101}, "displayName"),
        ({"tz": "Europe/Berlin\x00"}, None),
        ({"tz": "../../etc/localtime"}, "timezone"),
        ({"tz": ""}, "timezone"),
    ],
)
async def test_bad_input_is_refused_with_its_field_and_changes_nothing(
    api: ApiClient, variables: dict[str, Any], field: str | None
) -> None:
    token, _ = await api.register(name=None, timezone=BERLIN)
    before = (await api.execute(ME, token=token))["me"]
    with pytest.raises(GraphQLFailure) as failure:
        await profile(api, token, move=True, **variables)
    assert failure.value.code == "BAD_USER_INPUT", failure.value.errors
    if field is not None:
        assert failure.value.field == field
    assert (await api.execute(ME, token=token))["me"] == before


async def test_an_anonymous_caller_changes_no_profile(api: ApiClient) -> None:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(PROFILE, {"name": "Nobody"})
    assert failure.value.code == "UNAUTHENTICATED"


async def test_moving_takes_the_tasks_in_the_old_zone_with_their_wall_times(api: ApiClient) -> None:
    token, _ = await api.register(timezone=BERLIN)
    gym = await create(api, token, daily_at_seven(None, "Gym"))
    tokyo = await create(api, token, daily_at_seven(TOKYO, "Call home"))
    paused_input = daily_at_seven(BERLIN, "Paused")
    paused = await create(api, token, paused_input)
    await api.execute("mutation($id: ID!) { pauseTask(id: $id) { id } }", {"id": paused["id"]}, token=token)

    moved = await profile(api, token, tz=NEW_YORK, move=True)

    assert moved["user"]["timezone"] == NEW_YORK
    assert sorted(t["id"] for t in moved["movedTasks"]) == sorted([gym["id"], paused["id"]])
    assert moved["unmovedTasks"] == []
    for task in moved["movedTasks"]:
        assert task["schedule"]["timezone"] == NEW_YORK
        assert task["pendingChange"] is None  # no horizon: the move applies at once
        # the same date and 07:00, now in New York
        starts = instant(task["schedule"]["startsAt"]).astimezone(ZoneInfo(NEW_YORK))
        assert (starts.date(), starts.hour, starts.minute) == (seven_tomorrow(BERLIN).date(), 7, 0)
    gym_now = await api.execute(TASK, {"id": gym["id"]}, token=token)
    assert wall(gym_now["task"]["currentInstance"]["dueAt"], NEW_YORK) == (7, 0)
    assert instant(gym_now["task"]["currentInstance"]["dueAt"]) != instant(gym["currentInstance"]["dueAt"])
    # a task in a zone of its own stays where it is
    assert (await api.execute(TASK, {"id": tokyo["id"]}, token=token))["task"] == tokyo


async def test_changing_the_zone_without_moving_leaves_every_task_in_place(api: ApiClient) -> None:
    token, _ = await api.register(timezone=BERLIN)
    gym = await create(api, token, daily_at_seven(None))
    assert (await profile(api, token, tz=NEW_YORK))["movedTasks"] == []
    assert (await api.execute(TASK, {"id": gym["id"]}, token=token))["task"] == gym


async def test_under_a_horizon_the_move_waits_like_any_easier_edit(api: ApiClient) -> None:
    # a zone change is how a deadline could be dodged: New York's 07:00 comes six hours after Berlin's
    token, _ = await api.register(timezone=BERLIN)
    gym = await create(api, token, daily_at_seven(None))
    await api.execute(HORIZON, {"days": 7}, token=token)

    asked = datetime.now(UTC)
    moved = await profile(api, token, tz=NEW_YORK, move=True)

    (task,) = moved["movedTasks"]
    assert task["schedule"] == gym["schedule"]  # still Berlin's 07:00 ...
    assert task["currentInstance"] == gym["currentInstance"]  # ... and the instance due then
    pending = task["pendingChange"]
    assert pending["schedule"]["timezone"] == NEW_YORK  # ... until the horizon has passed
    assert wall(pending["schedule"]["startsAt"], NEW_YORK) == (7, 0)
    assert abs(instant(pending["effectiveAt"]) - (asked + timedelta(days=7))) < timedelta(minutes=1)


async def test_concurrent_copies_move_each_task_once(api: ApiClient) -> None:
    token, _ = await api.register(timezone=BERLIN)
    tasks = [await create(api, token, daily_at_seven(None, f"Task {n}")) for n in range(3)]
    answers = await asyncio.gather(*(profile(api, token, tz=NEW_YORK, move=True) for _ in range(6)))
    moved = sorted(t["id"] for answer in answers for t in answer["movedTasks"])
    assert moved == sorted(t["id"] for t in tasks)  # each by exactly one of the copies
    for task in tasks:
        now = (await api.execute(TASK, {"id": task["id"]}, token=token))["task"]
        assert now["schedule"]["timezone"] == NEW_YORK
        assert wall(now["schedule"]["startsAt"], NEW_YORK) == (7, 0)  # moved once, not shifted twice


async def test_an_occurrence_proved_before_a_move_west_is_not_owed_again_the_same_day(api: ApiClient) -> None:
    # proved at its Berlin wall time; New York's same wall time that day is still six hours ahead: a move
    # keeps wall times, so the chain goes on from the next day there, not from that day a second time
    token, _ = await api.register(timezone=BERLIN)
    soon = (datetime.now(ZoneInfo(BERLIN)) + timedelta(minutes=2)).replace(second=0, microsecond=0)
    schedule = {"startsAt": soon.isoformat(), "rrule": "FREQ=DAILY", "windowSeconds": 3600}
    gym = await create(
        api, token, {"title": "Gym", "method": "GPS", "schedule": schedule, **task_rules("GPS")}
    )
    current = "query($id: ID!) { task(id: $id) { currentInstance { id } } }"
    instance_id = (await api.execute(current, {"id": gym["id"]}, token=token))["task"]["currentInstance"][
        "id"
    ]
    proof = await check_in(api, token, instance_id)
    assert proof["status"] == "ACCEPTED"

    moved = await profile(api, token, tz=NEW_YORK, move=True)

    (task,) = moved["movedTasks"]
    due = instant(task["currentInstance"]["dueAt"]).astimezone(ZoneInfo(NEW_YORK))
    assert (due.hour, due.minute) == (soon.hour, soon.minute)  # the wall time kept
    assert due.date() == soon.date() + timedelta(days=1)  # the day after the one proved

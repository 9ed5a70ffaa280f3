"""Tasks over real HTTP: the contract's task operations, schedules across DST, and bad input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess, free_port

TASK_FIELDS = """
  id title description method state streak createdAt
  owner { id displayName }
  schedule { startsAt rrule timezone windowSeconds graceSeconds }
  gps { center { latitude longitude } radiusMeters maxAccuracyMeters }
  video { minDurationSeconds }
  partnerReview { reviewWindowSeconds onTimeout }
  currentInstance { id status opensAt dueAt closesAt isOpen }
  upcoming(first: 4)
"""
CREATE = f"mutation($input: CreateTaskInput!) {{ createTask(input: $input) {{ {TASK_FIELDS} }} }}"


def task_input(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "title": "Gym",
        "method": "PHOTO",
        "schedule": {
            "startsAt": (datetime.now(UTC) + timedelta(days=1)).isoformat(),
            "rrule": "FREQ=DAILY",
            "timezone": "UTC",
        },
    }
    base.update(overrides)
    return base


def wall_clock(instant: str, zone: str) -> str:
    """An API instant (UTC, Z) read in a task's zone, as its owner's clock shows it."""
    assert instant.endswith("Z")
    return datetime.fromisoformat(instant).astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M")


async def create(api: ApiClient, token: str, **overrides: Any) -> dict[str, Any]:
    task: dict[str, Any] = (await api.execute(CREATE, {"input": task_input(**overrides)}, token=token))[
        "createTask"
    ]
    return task


async def test_a_schedule_without_a_zone_takes_the_owners(api: ApiClient) -> None:
    """Left out or null, the zone is the one the owner registered with: 07:00 stays 07:00 in summer."""
    token, _ = await api.register(timezone="Europe/Berlin")
    winter = {"startsAt": "2027-03-27T07:00:00+01:00", "rrule": "FREQ=DAILY"}
    left_out = await create(api, token, schedule=winter)
    null = await create(api, token, schedule={**winter, "timezone": None})
    given = await create(api, token, schedule={**winter, "timezone": "UTC"})

    assert left_out["schedule"]["timezone"] == null["schedule"]["timezone"] == "Europe/Berlin"
    # the night of 28 March the clocks go forward: a Berlin 07:00 is 05:00Z, a UTC one stays 06:00Z
    assert left_out["upcoming"][:2] == ["2027-03-27T06:00:00Z", "2027-03-28T05:00:00Z"]
    assert [wall_clock(at, "Europe/Berlin") for at in left_out["upcoming"][:2]] == [
        "2027-03-27 07:00",
        "2027-03-28 07:00",
    ]
    assert given["schedule"]["timezone"] == "UTC"
    assert given["upcoming"][1] == "2027-03-28T06:00:00Z"


async def test_daily_berlin_task_keeps_local_time_across_dst(api: ApiClient) -> None:
    token, _ = await api.register(timezone="Europe/Berlin")
    # 07:30 in Berlin, starting the day before the October change (CEST +02:00 -> CET +01:00)
    task = await create(
        api,
        token,
        title="Run",
        schedule={
            "startsAt": "2027-10-30T07:30:00+02:00",
            "rrule": "FREQ=DAILY",
            "timezone": "Europe/Berlin",
        },
    )
    assert task["state"] == "ACTIVE"
    assert task["schedule"]["startsAt"] == "2027-10-30T05:30:00Z"
    assert task["upcoming"][:3] == ["2027-10-30T05:30:00Z", "2027-10-31T06:30:00Z", "2027-11-01T06:30:00Z"]
    zone = task["schedule"]["timezone"]
    assert [wall_clock(at, zone) for at in task["upcoming"][:3]] == [
        "2027-10-30 07:30",
        "2027-10-31 07:30",
        "2027-11-01 07:30",
    ]
    current = task["currentInstance"]
    assert current["status"] == "PENDING"
    assert current["dueAt"] == "2027-10-30T05:30:00Z"
    assert current["opensAt"] == "2027-10-30T04:30:00Z"  # default window: one hour
    assert wall_clock(current["dueAt"], zone) == "2027-10-30 07:30"
    assert current["isOpen"] is False


async def test_create_gps_task_shows_its_rule_to_the_owner(api: ApiClient) -> None:
    token, user = await api.register()
    task = await create(
        api,
        token,
        method="GPS",
        gps={"center": {"latitude": 52.52, "longitude": 13.405}, "radiusMeters": 150},
    )
    assert task["gps"] == {
        "center": {"latitude": 52.52, "longitude": 13.405},
        "radiusMeters": 150.0,
        "maxAccuracyMeters": 100.0,
    }
    assert task["owner"]["id"] == user["id"]
    assert task["streak"] == 0


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"schedule": {"startsAt": "2030-01-01T07:00:00+00:00", "rrule": "FREQ=DAILY;BYFOO=1"}}, "rrule"),
        ({"schedule": {"startsAt": "2030-01-01T07:00:00+00:00", "rrule": "nonsense"}}, "rrule"),
        ({"schedule": {"startsAt": "2030-01-01T07:00:00+00:00", "timezone": "Nowhere/Land"}}, "timezone"),
        ({"schedule": {"startsAt": "2030-01-01T07:00:00+00:00", "rrule": "FREQ=SECONDLY"}}, "windowSeconds"),
        (
            {
                "schedule": {
                    "startsAt": "2030-01-01T07:00:00+00:00",
                    "rrule": "FREQ=HOURLY",
                    "windowSeconds": 3000,
                    "graceSeconds": 700,
                }
            },
            "windowSeconds",
        ),
        ({"schedule": {"startsAt": "2030-01-01T07:00:00"}}, "startsAt"),
        ({"method": "GPS"}, "gps"),
        ({"method": "VIDEO"}, "video"),
        (
            {"method": "GPS", "gps": {"center": {"latitude": 91, "longitude": 0}, "radiusMeters": 5}},
            "latitude",
        ),
        (
            {"method": "GPS", "gps": {"center": {"latitude": 0, "longitude": 181}, "radiusMeters": 5}},
            "longitude",
        ),
        (
            {"method": "GPS", "gps": {"center": {"latitude": 0, "longitude": 0}, "radiusMeters": 0}},
            "radiusMeters",
        ),
        ({"title": "   "}, "title"),
    ],
)
async def test_bad_input_names_the_field(api: ApiClient, overrides: dict[str, Any], field: str) -> None:
    token, _ = await api.register()
    before = (await api.execute("query { tasks { totalCount } }", token=token))["tasks"]["totalCount"]
    with pytest.raises(GraphQLFailure) as failure:
        await create(api, token, **overrides)
    assert failure.value.code == "BAD_USER_INPUT"
    assert failure.value.field is not None and failure.value.field.endswith(field), failure.value.errors
    assert field.split(".")[-1] in failure.value.message
    after = (await api.execute("query { tasks { totalCount } }", token=token))["tasks"]["totalCount"]
    assert after == before  # nothing stored half-way


UPDATE = f"mutation($id: ID!, $input: UpdateTaskInput!) {{ updateTask(id: $id, input: $input) {{ {TASK_FIELDS} }} }}"


async def test_a_method_rule_is_checked_stored_and_edited_on_its_own_methods_tasks_only(
    api: ApiClient,
) -> None:
    token, _ = await api.register()
    video = await create(api, token, method="VIDEO", video={"minDurationSeconds": 5})
    assert video["video"] == {"minDurationSeconds": 5.0}
    with pytest.raises(GraphQLFailure) as out_of_range:
        await create(api, token, method="VIDEO", video={"minDurationSeconds": 0})
    assert (out_of_range.value.code, out_of_range.value.field) == (
        "BAD_USER_INPUT",
        "input.video.minDurationSeconds",
    )
    longer = {"id": video["id"], "input": {"video": {"minDurationSeconds": 8}}}  # harder: applies at once
    assert (await api.execute(UPDATE, longer, token=token))["updateTask"]["video"] == {
        "minDurationSeconds": 8.0
    }

    count = "query { tasks { totalCount } }"
    before = (await api.execute(count, token=token))["tasks"]["totalCount"]
    berlin = {"center": {"latitude": 52.52, "longitude": 13.405}, "radiusMeters": 100}
    for given, field in (
        ({"video": {"minDurationSeconds": 5}}, "input.video"),
        ({"gps": berlin}, "input.gps"),
    ):
        with pytest.raises(GraphQLFailure) as on_create:  # a PHOTO task: the rule is refused, not stored
            await create(api, token, **given)
        assert (on_create.value.code, on_create.value.field) == ("BAD_USER_INPUT", field)
        assert "applies only to" in on_create.value.message
    assert (await api.execute(count, token=token))["tasks"]["totalCount"] == before

    photo = await create(api, token)
    with pytest.raises(GraphQLFailure) as refused:
        await api.execute(
            UPDATE, {"id": photo["id"], "input": {"video": {"minDurationSeconds": 8}}}, token=token
        )
    assert (refused.value.code, refused.value.field) == ("BAD_USER_INPUT", "input.video")
    assert "applies only to VIDEO tasks" in refused.value.message
    seen = await api.execute(
        f"query($id: ID!) {{ task(id: $id) {{ {TASK_FIELDS} }} }}", {"id": photo["id"]}, token=token
    )
    assert seen["task"]["video"] is None  # nothing stored half-way


async def test_a_rule_that_never_occurs_is_refused(api: ApiClient) -> None:
    token, _ = await api.register()
    with pytest.raises(GraphQLFailure) as failure:
        await create(
            api,
            token,
            schedule={
                "startsAt": "2030-01-01T07:00:00+00:00",
                "rrule": "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
            },
        )
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "input.schedule.rrule")


async def test_an_interval_under_the_minimum_is_refused(service_env: dict[str, str]) -> None:
    env = {**service_env, "PROOFLOOP_MIN_INTERVAL_SECONDS": "60"}  # the shipped default
    with ServerProcess(env, port=free_port()) as server:
        async with ApiClient(server.url) as api:
            token, _ = await api.register()
            with pytest.raises(GraphQLFailure) as failure:
                await create(
                    api,
                    token,
                    schedule={
                        "startsAt": "2030-01-01T07:00:00+00:00",
                        "rrule": "FREQ=SECONDLY;INTERVAL=30",
                        "windowSeconds": 10,
                    },
                )
            assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "input.schedule.rrule")
            assert "60" in failure.value.message
            minutely = await create(
                api,
                token,
                schedule={
                    "startsAt": "2030-01-01T07:00:00+00:00",
                    "rrule": "FREQ=MINUTELY",
                    "windowSeconds": 10,
                },
            )
            assert minutely["state"] == "ACTIVE"


async def test_one_off_task_and_count_exhaustion(api: ApiClient) -> None:
    token, _ = await api.register()
    one_off = await create(api, token, schedule={"startsAt": "2030-05-01T09:00:00+00:00"})
    assert one_off["upcoming"] == ["2030-05-01T09:00:00Z"]
    counted = await create(
        api, token, schedule={"startsAt": "2030-05-01T09:00:00+00:00", "rrule": "FREQ=WEEKLY;COUNT=2"}
    )
    assert counted["upcoming"] == ["2030-05-01T09:00:00Z", "2030-05-08T09:00:00Z"]
    past = await create(api, token, schedule={"startsAt": "2020-05-01T09:00:00+00:00"})
    assert past["state"] == "ENDED"
    assert past["currentInstance"] is None


def _next_mo_we_fr() -> str:
    """startsAt must be an occurrence of the rule: the next Monday, Wednesday or Friday, 07:00 UTC."""
    day = datetime.now(UTC).replace(hour=7, minute=0, second=0, microsecond=0) + timedelta(days=1)
    while day.weekday() not in (0, 2, 4):
        day += timedelta(days=1)
    return day.isoformat()


async def test_pause_resume_update_delete(api: ApiClient) -> None:
    token, _ = await api.register()
    task = await create(api, token)
    first_instance = task["currentInstance"]["id"]

    paused = (
        await api.execute(
            "mutation($id: ID!) { pauseTask(id: $id) { state currentInstance { id } } }",
            {"id": task["id"]},
            token=token,
        )
    )["pauseTask"]
    assert paused == {"state": "PAUSED", "currentInstance": None}
    canceled = (
        await api.execute(
            "query($id: ID!) { instance(id: $id) { status } }", {"id": first_instance}, token=token
        )
    )["instance"]
    assert canceled["status"] == "CANCELED"

    resumed = (
        await api.execute(
            "mutation($id: ID!) { resumeTask(id: $id) { state currentInstance { id status } } }",
            {"id": task["id"]},
            token=token,
        )
    )["resumeTask"]
    assert resumed["state"] == "ACTIVE"
    assert resumed["currentInstance"]["status"] == "PENDING"
    assert resumed["currentInstance"]["id"] != first_instance

    updated = (
        await api.execute(
            """mutation($id: ID!, $input: UpdateTaskInput!) { updateTask(id: $id, input: $input) {
             title schedule { rrule windowSeconds } currentInstance { id dueAt } instances(first: 10) {
             totalCount edges { node { status } } } } }""",
            {
                "id": task["id"],
                "input": {
                    "title": "Gym, early",
                    "schedule": {"rrule": "FREQ=WEEKLY;BYDAY=MO,WE,FR", "startsAt": _next_mo_we_fr()},
                },
            },
            token=token,
        )
    )["updateTask"]
    assert updated["title"] == "Gym, early"
    assert updated["schedule"]["rrule"] == "FREQ=WEEKLY;BYDAY=MO,WE,FR"
    statuses = [e["node"]["status"] for e in updated["instances"]["edges"]]
    assert statuses == ["PENDING", "CANCELED", "CANCELED"]  # newest first; exactly one PENDING
    weekday = datetime.fromisoformat(updated["currentInstance"]["dueAt"]).weekday()
    assert weekday in (0, 2, 4)

    assert (await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task["id"]}, token=token))[
        "deleteTask"
    ] is True
    gone = await api.execute("query($id: ID!) { task(id: $id) { id } }", {"id": task["id"]}, token=token)
    assert gone["task"] is None


async def test_tasks_connection_pages_with_stable_cursors(api: ApiClient) -> None:
    token, _ = await api.register()
    ids = [(await create(api, token, title=f"T{i}"))["id"] for i in range(5)]
    seen: list[str] = []
    after = None
    while True:
        page = (
            await api.execute(
                "query($after: String) { tasks(first: 2, after: $after) { totalCount edges { cursor node { id } }"
                " pageInfo { hasNextPage endCursor } } }",
                {"after": after},
                token=token,
            )
        )["tasks"]
        assert page["totalCount"] == 5
        seen += [e["node"]["id"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == list(reversed(ids))  # newest first, each once
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute("query { tasks(first: 101) { totalCount } }", token=token)
    assert failure.value.code == "BAD_USER_INPUT"


async def test_strangers_see_nothing_and_cannot_act(api: ApiClient) -> None:
    owner, _ = await api.register()
    stranger, _ = await api.register()
    task = await create(api, owner)
    seen = await api.execute("query($id: ID!) { task(id: $id) { id } }", {"id": task["id"]}, token=stranger)
    assert seen["task"] is None
    instance = await api.execute(
        "query($id: ID!) { instance(id: $id) { id } }", {"id": task["currentInstance"]["id"]}, token=stranger
    )
    assert instance["instance"] is None
    for mutation in ("pauseTask(id: $id) { id }", "resumeTask(id: $id) { id }", "deleteTask(id: $id)"):
        with pytest.raises(GraphQLFailure) as failure:
            await api.execute(f"mutation($id: ID!) {{ {mutation} }}", {"id": task["id"]}, token=stranger)
        assert failure.value.code == "NOT_FOUND"
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute('mutation { pauseTask(id: "not-a-uuid") { id } }', token=owner)
    assert failure.value.code == "NOT_FOUND"

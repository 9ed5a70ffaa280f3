"""Malformed input is BAD_USER_INPUT naming its field, never INTERNAL_SERVER_ERROR (on PostgreSQL, and on
the embedded default where SQLite stores text and reads variables alike)."""

from __future__ import annotations

import base64
import json

import pytest

from harness.proofloop import (
    BERLIN,
    TASK_WITH_INSTANCE,
    ApiClient,
    GraphQLFailure,
    create_open_task,
    open_schedule,
)
from tests.support.backends import Deployment, both_backends
from tests.support.input_validation import CREATE, REGISTER, expect_bad_input, post_raw, task_input

UPDATE = "mutation($id: ID!, $input: UpdateTaskInput!) { updateTask(id: $id, input: $input) { id } }"


@pytest.fixture
def api(api_deployment: Deployment) -> ApiClient:
    return api_deployment.client()


@both_backends
@pytest.mark.parametrize(
    ("timezone"),
    # EST: a fixed UTC-5 with no daylight saving time, never New York's clock
    ["Europe", "A" * 300, "Factory", "right/Europe/Berlin", "posix/Europe/Berlin", "../etc/passwd", "EST"],
)
async def test_timezones_that_are_no_place(api: ApiClient, timezone: str) -> None:
    registered = {"e": f"tz-{abs(hash(timezone))}@example.com", "n": "Tz", "tz": timezone}
    assert await expect_bad_input(api, REGISTER, registered, None) == "timezone"
    token, _ = await api.register()
    field = await expect_bad_input(api, CREATE, {"input": task_input(schedule_timezone=timezone)}, token)
    assert field == "input.schedule.timezone"
    task_id, _ = await create_open_task(api, token, "PHOTO")
    patch = {"id": task_id, "input": {"schedule": {"timezone": timezone}}}
    assert await expect_bad_input(api, UPDATE, patch, token) == "input.schedule.timezone"


@both_backends
@pytest.mark.parametrize("bad", ["nul\x00inside", "lone \ud800 surrogate", "\udfff"])
async def test_text_the_database_cannot_store(api: ApiClient, bad: str) -> None:
    assert (
        await expect_bad_input(api, REGISTER, {"e": f"a{bad}@example.com", "n": "A", "tz": "UTC"}, None)
        == "email"
    )
    assert (
        await expect_bad_input(api, REGISTER, {"e": "b@example.com", "n": bad, "tz": "UTC"}, None)
        == "displayName"
    )
    token, _ = await api.register()
    assert await expect_bad_input(api, CREATE, {"input": task_input(title=bad)}, token) == "input.title"
    field = await expect_bad_input(api, CREATE, {"input": task_input(description=bad)}, token)
    assert field == "input.description"
    invite = "mutation($e: String!) { invitePartner(email: $e) { id } }"
    assert await expect_bad_input(api, invite, {"e": bad}, token) == "email"


async def test_an_overlong_rrule(api: ApiClient) -> None:
    token, _ = await api.register()
    rrule = "FREQ=DAILY;BYHOUR=" + ",".join(["7"] * 300)
    field = await expect_bad_input(api, CREATE, {"input": task_input(schedule_rrule=rrule)}, token)
    assert field == "input.schedule.rrule"


async def test_event_ids_beyond_any_position(api: ApiClient) -> None:
    token, _ = await api.register()
    for after in ("99999999999999999999999", "-1", "\uff11\uff12", "1e3"):
        field = await expect_bad_input(api, "query($a: ID) { events(after: $a) { id } }", {"a": after}, token)
        assert field == "after"


async def test_cursors_that_are_not_ours(api: ApiClient) -> None:
    token, _ = await api.register()
    task_id, _ = await create_open_task(api, token, "PHOTO")
    foreign = [
        base64.urlsafe_b64encode(b"2026-01-01T00:00:00+00:00|not-a-uuid").decode(),
        base64.urlsafe_b64encode(b"2026-01-01T00:00:00|00000000-0000-0000-0000-000000000000").decode(),
        base64.urlsafe_b64encode(b"x").decode(),
        "%%%",
    ]
    for cursor in foreign:
        tasks = "query($a: String) { tasks(after: $a) { totalCount } }"
        assert await expect_bad_input(api, tasks, {"a": cursor}, token) == "after"
    for cursor in (base64.urlsafe_b64encode(b"seven").decode(), base64.urlsafe_b64encode(b"9" * 40).decode()):
        instances = "query($id: ID!, $a: String) { task(id: $id) { instances(after: $a) { totalCount } } }"
        with pytest.raises(GraphQLFailure) as failure:
            await api.execute(instances, {"id": task_id, "a": cursor}, token=token)
        assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "after")


async def test_geofences_within_physical_bounds(api: ApiClient) -> None:
    token, _ = await api.register()
    center = {"latitude": BERLIN[0], "longitude": BERLIN[1]}
    for radius, accuracy, field in (
        (1e308, 100, "input.gps.radiusMeters"),
        (200_000, 100, "input.gps.radiusMeters"),
        (0, 100, "input.gps.radiusMeters"),
        (150, 1e9, "input.gps.maxAccuracyMeters"),
    ):
        gps = {"center": center, "radiusMeters": radius, "maxAccuracyMeters": accuracy}
        value = task_input(method="GPS", gps=gps)
        assert await expect_bad_input(api, CREATE, {"input": value}, token) == field
    _, instance_id = await create_open_task(api, token, "GPS")
    check_in = """mutation($i: ID!, $a: Float!) {
      checkIn(instanceId: $i, location: {latitude: 52.52, longitude: 13.405}, accuracyMeters: $a) { status }
    }"""
    assert await expect_bad_input(api, check_in, {"i": instance_id, "a": 1e300}, token) == "accuracyMeters"
    literal = check_in.replace("$a: Float!", "").replace("accuracyMeters: $a", "accuracyMeters: 1e400")
    assert await expect_bad_input(
        api, literal.replace("($i: ID!, )", "($i: ID!)"), {"i": instance_id}, token
    ) == ("accuracyMeters")


async def test_non_numbers_in_json_variables(api: ApiClient) -> None:
    token, _ = await api.register()
    for literal in ("NaN", "Infinity", "-Infinity", "1e400", "9" * 40):
        gps = {"center": {"latitude": "LATITUDE", "longitude": 1}, "radiusMeters": 100}
        variables = {"input": {"title": "Run", "method": "GPS", "schedule": open_schedule(), "gps": gps}}
        document = json.dumps({"query": TASK_WITH_INSTANCE, "variables": variables})
        document = document.replace('"LATITUDE"', literal)  # JSON that json.dumps would never write
        status, body = await post_raw(api.url, document.encode(), token)
        error = body["errors"][0]
        assert status == 400
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "input.gps.center.latitude"}


@both_backends
async def test_variables_nested_a_thousand_deep(api: ApiClient) -> None:
    token, _ = await api.register()
    for opener, closer in (("[", "]"), ('{"a":', "}")):
        nested = opener * 1000 + "1" + closer * 1000
        query = json.dumps("query($i: ID!) { task(id: $i) { id } }")
        body = f'{{"query": {query}, "variables": {{"i": {nested}}}}}'
        status, answer = await post_raw(api.url, body.encode(), token)
        assert status == 400
        assert answer["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT", "field": "variables"}
    # deep brackets inside a string are text, not nesting
    text = "[" * 1000
    data = await api.execute("query($i: ID!) { task(id: $i) { id } }", {"i": text}, token=token)
    assert data == {"task": None}


async def test_a_review_needs_an_active_partner(api: ApiClient) -> None:
    token, _ = await api.register()
    rule = {"partnerReview": {"reviewWindowSeconds": 3600, "onTimeout": "APPROVE"}}
    _, instance_id = await create_open_task(api, token, "PARTNER", **rule)
    request = "mutation($i: ID!) { requestReview(instanceId: $i) { status } }"
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(request, {"i": instance_id}, token=token)
    assert failure.value.code == "CONFLICT"
    assert "ACTIVE partner" in failure.value.message
    instance = await api.execute(
        "query($i: ID!) { instance(id: $i) { status } }", {"i": instance_id}, token=token
    )
    assert instance["instance"]["status"] == "PENDING"  # nothing was put up for an unseen approval


async def test_variables_graphql_refuses_name_their_path(api: ApiClient) -> None:
    token, _ = await api.register()
    tasks = "query($n: Int!) { tasks(first: $n) { totalCount } }"
    for value in (10**10, "x", 1.5):
        assert await expect_bad_input(api, tasks, {"n": value}, token) == "n"
    gps = {"center": {"latitude": BERLIN[0], "longitude": BERLIN[1]}, "radiusMeters": "wide"}
    field = await expect_bad_input(api, CREATE, {"input": task_input(method="GPS", gps=gps)}, token)
    assert field == "input.gps.radiusMeters"

"""GPS check-ins over real HTTP: the geofence, accuracy, speed, window and settlement rules."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from harness.proofloop import BERLIN, ApiClient, GraphQLFailure, create_open_task, open_schedule, partner_pair
from rules.gps import haversine_meters
from tests.support.proofs_gps import MUNICH, check_in

TASK = "query($id: ID!) { task(id: $id) { streak currentInstance { id status dueAt } } }"
MAX_SPEED_MS = 250 / 3.6  # PROOFLOOP_MAX_SPEED_KMH's default
VERIFICATIONS = "query($id: ID!) { instance(id: $id) { verifications { reason retryAfterSeconds } } }"


async def test_accepted_check_in_verifies_and_plans_the_next_instance(api: ApiClient) -> None:
    token, _ = await api.register()
    task_id, instance_id = await create_open_task(api, token, "GPS")
    before = (await api.execute(TASK, {"id": task_id}, token=token))["task"]["currentInstance"]

    proof = await check_in(api, token, instance_id, (BERLIN[0] + 0.0005, BERLIN[1]))
    assert (proof["status"], proof["reason"], proof["method"]) == ("ACCEPTED", None, "GPS")
    assert proof["distanceMeters"] == pytest.approx(55.6, abs=1.0)
    assert proof["location"] == {"latitude": BERLIN[0] + 0.0005, "longitude": BERLIN[1]}
    assert proof["instance"]["status"] == "VERIFIED"
    assert proof["instance"]["settledAt"] is not None

    task = (await api.execute(TASK, {"id": task_id}, token=token))["task"]
    assert task["streak"] == 1
    following = task["currentInstance"]
    assert following["id"] != instance_id and following["status"] == "PENDING"
    due = datetime.fromisoformat(following["dueAt"])
    assert due - datetime.fromisoformat(before["dueAt"]) == timedelta(days=1)


@pytest.mark.parametrize(
    ("point", "accuracy", "reason"),
    [((BERLIN[0] + 0.002, BERLIN[1]), 10.0, "OUTSIDE_GEOFENCE"), (BERLIN, 500.0, "LOW_ACCURACY")],
)
async def test_rule_failures_are_rejections_and_allow_a_retry(
    api: ApiClient, point: tuple[float, float], accuracy: float, reason: str
) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "GPS")
    # recorded a minute ago: the retry at the centre must not look like a teleport
    a_minute_ago = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    rejected = await check_in(api, token, instance_id, point, accuracy, recorded_at=a_minute_ago)
    assert (rejected["status"], rejected["reason"]) == ("REJECTED", reason)
    assert rejected["instance"]["status"] == "PENDING"
    assert rejected["decidedAt"] is not None

    retry = await check_in(api, token, instance_id)
    assert retry["status"] == "ACCEPTED"


async def test_implausible_jump_between_check_ins_is_rejected(api: ApiClient) -> None:
    token, _ = await api.register()
    _, berlin_instance = await create_open_task(api, token, "GPS")
    munich_rule = {"gps": {"center": {"latitude": MUNICH[0], "longitude": MUNICH[1]}, "radiusMeters": 150}}
    _, munich_instance = await create_open_task(api, token, "GPS", **munich_rule)

    assert (await check_in(api, token, berlin_instance))["status"] == "ACCEPTED"
    jump = await check_in(api, token, munich_instance, MUNICH)  # 500 km a moment later
    assert (jump["status"], jump["reason"]) == ("REJECTED", "IMPLAUSIBLE_LOCATION")
    assert jump["distanceMeters"] < 150


@pytest.mark.parametrize(
    ("point", "accuracy", "reason"),
    [
        ((BERLIN[0] + 0.0099, BERLIN[1]), 10.0, "OUTSIDE_GEOFENCE"),  # 1.1 km off
        ((BERLIN[0] + 0.045, BERLIN[1]), 500.0, "LOW_ACCURACY"),  # 5 km off, a vague fix
    ],
)
async def test_a_refused_fix_does_not_hold_back_the_right_one_a_moment_later(
    api: ApiClient, point: tuple[float, float], accuracy: float, reason: str
) -> None:
    """A wrong position 15 s ago is no start for the speed check: only accepted fixes are."""
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "GPS")
    wrong_at = datetime.now(UTC) - timedelta(minutes=1)
    wrong = await check_in(api, token, instance_id, point, accuracy, recorded_at=wrong_at.isoformat())
    assert (wrong["status"], wrong["reason"], wrong["retryAfterSeconds"]) == ("REJECTED", reason, None)
    right_at = (wrong_at + timedelta(seconds=15)).isoformat()
    right = await check_in(api, token, instance_id, recorded_at=right_at)
    assert (right["status"], right["reason"]) == ("ACCEPTED", None)


async def test_an_implausible_jump_says_when_a_retry_passes(api: ApiClient) -> None:
    owner, _, partner, _ = await partner_pair(api)
    _, here = await create_open_task(api, owner, "GPS")
    there_point = (BERLIN[0] + 0.09, BERLIN[1])  # 10 km north
    there_rule = {"center": {"latitude": there_point[0], "longitude": there_point[1]}, "radiusMeters": 150}
    _, there = await create_open_task(api, owner, "GPS", gps=there_rule)
    start = datetime.now(UTC) - timedelta(hours=1)  # every fix recorded in the past: exact elapsed times
    assert (await check_in(api, owner, here, recorded_at=start.isoformat()))["status"] == "ACCEPTED"

    ten_seconds_later = start + timedelta(seconds=10)
    jump = await check_in(api, owner, there, there_point, recorded_at=ten_seconds_later.isoformat())
    travelled = haversine_meters(*BERLIN, *there_point) - 2 * 10.0  # beyond both fixes' accuracy
    wait = math.ceil(travelled / MAX_SPEED_MS - 10)
    assert (jump["status"], jump["reason"], jump["retryAfterSeconds"]) == (
        "REJECTED",
        "IMPLAUSIBLE_LOCATION",
        wait,
    )
    seen = await api.execute(VERIFICATIONS, {"id": there}, token=partner)
    assert seen["instance"]["verifications"] == [
        {"reason": "IMPLAUSIBLE_LOCATION", "retryAfterSeconds": None}
    ]

    # measured from the last ACCEPTED fix: a second early still fails (by a second), on time passes
    early = await check_in(
        api,
        owner,
        there,
        there_point,
        recorded_at=(ten_seconds_later + timedelta(seconds=wait - 1)).isoformat(),
    )
    assert (early["reason"], early["retryAfterSeconds"]) == ("IMPLAUSIBLE_LOCATION", 1)
    on_time = await check_in(
        api, owner, there, there_point, recorded_at=(ten_seconds_later + timedelta(seconds=wait)).isoformat()
    )
    assert (on_time["status"], on_time["retryAfterSeconds"]) == ("ACCEPTED", None)


@pytest.mark.parametrize(
    ("point", "field"),
    [((91.0, 13.0), "location.latitude"), ((52.0, -180.5), "location.longitude")],
)
async def test_out_of_range_coordinates_are_bad_input(
    api: ApiClient, point: tuple[float, float], field: str
) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "GPS")
    with pytest.raises(GraphQLFailure) as failure:
        await check_in(api, token, instance_id, point)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", field)


@pytest.mark.parametrize(
    ("accuracy", "recorded_at", "field"),
    [
        (0.0, None, "accuracyMeters"),
        (-5.0, None, "accuracyMeters"),
        (10.0, (datetime.now(UTC) + timedelta(hours=1)).isoformat(), "recordedAt"),
        (10.0, "2026-01-01T10:00:00", "recordedAt"),  # no offset
    ],
    # ids that do not hold the clock, so every xdist process collects the same test names
    ids=["zero-accuracy", "negative-accuracy", "recorded-an-hour-ahead", "recorded-without-offset"],
)
async def test_bad_accuracy_and_recorded_at_are_bad_input(
    api: ApiClient, accuracy: float, recorded_at: str | None, field: str
) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "GPS")
    with pytest.raises(GraphQLFailure) as failure:
        await check_in(api, token, instance_id, accuracy=accuracy, recorded_at=recorded_at)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", field)


async def test_recorded_at_slightly_ahead_is_tolerated(api: ApiClient) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "GPS")
    ahead = (datetime.now(UTC) + timedelta(seconds=20)).isoformat()
    assert (await check_in(api, token, instance_id, recorded_at=ahead))["status"] == "ACCEPTED"


async def test_check_in_before_the_window_opens_is_outside_window(api: ApiClient) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "GPS", schedule=open_schedule(starts_in_seconds=7200))
    early = await check_in(api, token, instance_id)
    assert (early["status"], early["reason"]) == ("REJECTED", "OUTSIDE_WINDOW")
    assert early["instance"]["status"] == "PENDING"


async def test_proof_for_a_settled_instance_is_a_conflict(api: ApiClient) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "GPS")
    await check_in(api, token, instance_id)
    with pytest.raises(GraphQLFailure) as failure:
        await check_in(api, token, instance_id)
    assert failure.value.code == "CONFLICT"


async def test_check_in_on_a_photo_task_names_the_argument(api: ApiClient) -> None:
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "PHOTO")
    with pytest.raises(GraphQLFailure) as failure:
        await check_in(api, token, instance_id)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "instanceId")


async def test_unknown_or_malformed_instance_is_not_found(api: ApiClient) -> None:
    token, _ = await api.register()
    for instance_id in ("00000000-0000-0000-0000-000000000000", "not-an-id"):
        with pytest.raises(GraphQLFailure) as failure:
            await check_in(api, token, instance_id)
        assert failure.value.code == "NOT_FOUND"

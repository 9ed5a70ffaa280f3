"""Avoid-a-place goals through the real API: the owner's phone reports location samples in batches, and
at the due time the chain judges them: REJECTED with ENTERED_AVOIDED_PLACE (and when) for one sample
certainly inside, VERIFIED when the samples cover the window, REJECTED with NOT_ENOUGH_SAMPLES when they do
not. Samples keep no position, are deleted once judged, and no partner ever sees one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from harness.proofloop import BERLIN, ApiClient, GraphQLFailure, create_open_task, open_schedule, partner_pair
from services.kit import as_utc, decode_id
from tests.support.avoid_a_place import OUTSIDE, avoid_rule, judged, report, sample, soon
from tests.support.backends import Deployment, both_backends

CHECK_IN = """mutation($id: ID!) { checkIn(instanceId: $id, location: {latitude: 52.52, longitude: 13.405},
  accuracyMeters: 10) { id } }"""


@pytest.fixture
def api(deployment: Deployment) -> ApiClient:
    return deployment.client()


async def samples_kept(deployment: Deployment, instance_id: str) -> int:
    [(count,)] = await deployment.sql(
        "SELECT count(*) FROM location_samples WHERE instance_id = $1", decode_id(instance_id, "TaskInstance")
    )
    return int(count)


@both_backends
async def test_one_sample_inside_rejects_and_partners_see_when_not_where(
    api: ApiClient, deployment: Deployment
) -> None:
    owner, _, partner, _ = await partner_pair(api)
    _, instance_id = await create_open_task(api, owner, "GPS", soon(20), gps=avoid_rule())
    inside = sample(BERLIN, 3)
    kept = await report(api, owner, instance_id, [sample(OUTSIDE, 15), inside, sample(OUTSIDE, 1)])
    assert kept == {"accepted": 3, "ignored": 0, "total": 3}
    assert await samples_kept(deployment, instance_id) == 3

    for token in (owner, partner):
        [verdict] = (await judged(api, token, instance_id))["verifications"]
        assert (verdict["status"], verdict["reason"]) == ("REJECTED", "ENTERED_AVOIDED_PLACE")
        assert datetime.fromisoformat(verdict["enteredAt"]) == datetime.fromisoformat(inside["recordedAt"])
        assert verdict["location"] is None and verdict["distanceMeters"] is None  # no position, for anyone
    assert (await judged(api, owner, instance_id))["status"] == "REJECTED"
    assert await samples_kept(deployment, instance_id) == 0  # judged: the samples are gone


@both_backends
async def test_covering_samples_verify_and_the_chain_goes_on(api: ApiClient) -> None:
    token, _ = await api.register()
    task_id, instance_id = await create_open_task(api, token, "GPS", soon(20), gps=avoid_rule())
    # a vague fix at the edge is not "inside": only a whole accuracy circle inside convicts
    edge = (BERLIN[0] + 0.0012, BERLIN[1])  # ~133 m from the centre of a 150 m place, accuracy 40 m
    assert (await report(api, token, instance_id, [sample(OUTSIDE, 10), sample(edge, 2, accuracy=40)]))[
        "accepted"
    ] == 2
    instance = await judged(api, token, instance_id)
    assert instance["status"] == "VERIFIED"
    assert [(v["method"], v["status"], v["reason"]) for v in instance["verifications"]] == [
        ("GPS", "ACCEPTED", None)
    ]
    task = await api.execute(
        "query($id: ID!) { task(id: $id) { streak currentInstance { id } } }", {"id": task_id}, token=token
    )
    assert task["task"]["streak"] == 1 and task["task"]["currentInstance"]["id"] != instance_id


@both_backends
async def test_samples_recorded_ahead_cover_no_time_not_yet_lived(
    api: ApiClient, deployment: Deployment
) -> None:
    """Samples that claim the next 20 s (within the clock slack) are kept as recorded when they arrived: a
    phone cannot report the coverage of a window before living it."""
    token, _ = await api.register()
    _, instance_id = await create_open_task(api, token, "GPS", open_schedule(60), gps=avoid_rule())
    lived = [sample(OUTSIDE, s) for s in (20, 10, 0)]
    ahead = [sample(OUTSIDE, -s) for s in (10, 20)]  # recorded "in the future", before the due time
    assert (await report(api, token, instance_id, lived + ahead))["accepted"] == 5
    answered = datetime.now(UTC)
    [(latest,)] = await deployment.sql(
        "SELECT max(recorded_at) FROM location_samples WHERE instance_id = $1",
        decode_id(instance_id, "TaskInstance"),
    )
    assert as_utc(latest) <= answered


async def test_too_few_samples_or_none_is_its_own_outcome_not_a_miss(api: ApiClient) -> None:
    token, _ = await api.register()
    # a window of 90 s and one sample 80 s before the due time: 80 s uncovered, more than the 60 allowed
    _, sparse = await create_open_task(api, token, "GPS", soon(90), gps=avoid_rule())
    _, silent = await create_open_task(api, token, "GPS", soon(90), gps=avoid_rule())
    await report(api, token, sparse, [sample(OUTSIDE, 76)])
    for instance_id in (sparse, silent):
        instance = await judged(api, token, instance_id)
        assert instance["status"] == "REJECTED"
        assert [v["reason"] for v in instance["verifications"]] == ["NOT_ENOUGH_SAMPLES"]


async def test_reports_are_checked_and_only_the_owners_count(api: ApiClient) -> None:
    owner, _, partner, _ = await partner_pair(api)
    _, instance_id = await create_open_task(api, owner, "GPS", open_schedule(600), gps=avoid_rule())
    ignored = await report(
        api, owner, instance_id, [sample(OUTSIDE, 4000), sample(OUTSIDE, 5, accuracy=80), sample(OUTSIDE, 5)]
    )
    assert ignored == {"accepted": 1, "ignored": 2, "total": 1}  # before the window; vaguer than 50 m
    refusals: list[tuple[str, list[dict[str, Any]], str, str | None]] = [
        (owner, [sample(OUTSIDE, 5)] * 501, "BAD_USER_INPUT", "samples"),
        (owner, [], "BAD_USER_INPUT", "samples"),
        (owner, [{**sample(OUTSIDE, 5), "latitude": 91}], "BAD_USER_INPUT", "samples.0.latitude"),
        (owner, [sample(OUTSIDE, -600)], "BAD_USER_INPUT", "samples.0.recordedAt"),  # in the future
        (partner, [sample(OUTSIDE, 5)], "FORBIDDEN", None),
    ]
    for token, samples, code, field in refusals:
        with pytest.raises(GraphQLFailure) as refused:
            await report(api, token, instance_id, samples)
        assert (refused.value.code, refused.value.field) == (code, field)
    with pytest.raises(GraphQLFailure) as wrong_proof:
        await api.execute(CHECK_IN, {"id": instance_id}, token=owner)
    assert (wrong_proof.value.code, wrong_proof.value.field) == ("BAD_USER_INPUT", "instanceId")

    _, plain = await create_open_task(api, owner, "GPS")
    with pytest.raises(GraphQLFailure) as not_avoid:
        await report(api, owner, plain, [sample(OUTSIDE, 5)])
    assert (not_avoid.value.code, not_avoid.value.field) == ("BAD_USER_INPUT", "instanceId")
    with pytest.raises(GraphQLFailure) as gap_alone:
        await create_open_task(api, owner, "GPS", gps={**avoid_rule(), "avoid": False})
    assert gap_alone.value.field == "input.gps.maxSampleGapSeconds"


UPDATE_WINDOW = """mutation($id: ID!, $w: Int!) {
  taskUpdate(input: {id: $id, schedule: {windowSeconds: $w}}) {
    task { schedule { windowSeconds } pendingChange { schedule { windowSeconds } } currentInstance { id } }
    userErrors { field code message }
  }
}"""


@both_backends
async def test_a_window_edit_under_the_horizon_neither_dodges_nor_erases_a_sample(api: ApiClient) -> None:
    """Staying away, a shorter window is the easier one: it waits; a longer one applies, from the next
    instance, and the instance that already holds a sample inside keeps it and is judged by it."""
    owner, _ = await api.register()
    horizon = "mutation { commitmentHorizonUpdate(input: {days: 30}) { userErrors { message } } }"
    assert (await api.execute(horizon, token=owner))["commitmentHorizonUpdate"]["userErrors"] == []
    task_id, instance_id = await create_open_task(api, owner, "GPS", soon(20), gps=avoid_rule())

    shorter = (await api.execute(UPDATE_WINDOW, {"id": task_id, "w": 10}, token=owner))["taskUpdate"]
    assert shorter["task"]["schedule"]["windowSeconds"] == 20  # easier to stay away 10 s than 20: it waits
    assert shorter["task"]["pendingChange"]["schedule"]["windowSeconds"] == 10

    await report(api, owner, instance_id, [sample(BERLIN, 2)])  # inside: this instance is lost
    longer = (await api.execute(UPDATE_WINDOW, {"id": task_id, "w": 3600}, token=owner))["taskUpdate"]
    assert longer["userErrors"] == [] and longer["task"]["schedule"]["windowSeconds"] == 3600  # harder: now
    assert longer["task"]["currentInstance"]["id"] == instance_id  # kept, not replaced by a fresh one
    verdict = await judged(api, owner, instance_id)
    assert (verdict["status"], verdict["verifications"][0]["reason"]) == ("REJECTED", "ENTERED_AVOIDED_PLACE")

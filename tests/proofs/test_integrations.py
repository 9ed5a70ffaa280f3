"""Automatic proofs from integrations, through the real API: a signed activity event POSTed to a task's
endpoint proves its open instance; tampered, replayed, stale, oversized and malformed events are refused
with their codes and record nothing; the per-task and per-address budgets hold under concurrent copies.

Signatures are computed here from the documented scheme (HMAC-SHA256 over "<timestamp>." + body), not
with the server's code, so a change to the scheme fails these tests.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness.proofloop import (
    ROOT,
    ApiClient,
    GraphQLFailure,
    child_env,
    create_open_task,
    local_http,
    open_schedule,
    partner_pair,
)
from tests.support.backends import Backend, Deployment, both_backends, deployed
from tests.support.integrations import CONNECT, Sender, activity, code_of, connected_task, verifications

EVENTS_PER_DAY = 6
REQUESTS_PER_MINUTE = 12
TASK = """query($id: ID!) { task(id: $id) { currentInstance { id status }
  integration { activityTypes minDurationSeconds minDistanceMeters connected endpointUrl }
  pendingChange { integration { activityTypes minDurationSeconds minDistanceMeters } } } }"""


@pytest.fixture(scope="module")
def integrations(request: pytest.FixtureRequest, backend: Backend) -> Iterator[Deployment]:
    """Small budgets; each test sends from its own address (X-Forwarded-For, trusted from 127.0.0.1 here),
    so the per-address budget is each test's own."""
    settings = {
        "PROOFLOOP_INTEGRATION_EVENTS_PER_DAY": str(EVENTS_PER_DAY),
        "PROOFLOOP_INTEGRATION_REQUESTS_PER_MINUTE": str(REQUESTS_PER_MINUTE),
        "PROOFLOOP_TRUSTED_PROXIES": "127.0.0.1",
    }
    with deployed(request, backend, settings) as running:
        yield running


@pytest.fixture
def api(integrations: Deployment) -> ApiClient:
    return integrations.client()


async def test_a_signed_activity_verifies_the_instance_and_plans_the_next(
    api: ApiClient, integrations: Deployment
) -> None:
    owner, _, partner, _ = await partner_pair(api)
    task_id, instance_id, sender = await connected_task(api, integrations.url, owner)
    event = activity(type="  Trail Run ")

    answer = await sender.send(event)
    assert answer.status_code == 200, answer.text
    proof = answer.json()["data"]["verification"]
    assert (proof["status"], proof["reason"], proof["instanceId"]) == ("ACCEPTED", None, instance_id)

    seen = await verifications(api, owner, instance_id)
    assert seen["status"] == "VERIFIED"
    [row] = seen["verifications"]
    assert (row["id"], row["method"], row["status"]) == (proof["id"], "INTEGRATION", "ACCEPTED")
    assert row["activity"] == {
        "source": "garmin",
        "type": "trail run",
        "occurredAt": row["activity"]["occurredAt"],
        "durationSeconds": 1800.0,
        "distanceMeters": 5000.0,
        "externalId": event["id"],
    }
    assert datetime.fromisoformat(row["activity"]["occurredAt"]) == datetime.fromisoformat(
        event["occurredAt"]
    )
    task = (await api.execute(TASK, {"id": task_id}, token=owner))["task"]
    assert task["currentInstance"]["id"] != instance_id and task["currentInstance"]["status"] == "PENDING"

    # the partner sees the proof and what was reported, but not the endpoint or the sender's own id
    as_partner = await verifications(api, partner, instance_id)
    assert as_partner["verifications"][0]["activity"]["externalId"] is None
    assert as_partner["verifications"][0]["activity"]["type"] == "trail run"
    partner_task = (await api.execute(TASK, {"id": task_id}, token=partner))["task"]
    assert partner_task["integration"]["connected"] is True
    assert partner_task["integration"]["endpointUrl"] is None
    events = await api.execute(
        "query($t: ID!) { events(taskId: $t) { type verification { method } } }",
        {"t": task_id},
        token=partner,
    )
    assert [e["type"] for e in events["events"]] == ["PROOF_SUBMITTED", "VERIFIED"]


async def test_each_rule_it_breaks_is_a_rejection_that_leaves_the_instance_open(
    api: ApiClient, integrations: Deployment
) -> None:
    token, _ = await api.register()
    _, instance_id, sender = await connected_task(api, integrations.url, token)
    opened = datetime.now(UTC) - timedelta(seconds=3600)  # open_schedule: the window opened an hour ago
    broken = [
        (activity(type="ride"), "ACTIVITY_MISMATCH"),
        (activity(type=None), "ACTIVITY_MISMATCH"),
        (activity(durationSeconds=599), "TOO_SHORT"),
        (activity(distanceMeters=None), "BELOW_MIN_DISTANCE"),
        (activity(occurredAt=(opened - timedelta(minutes=5)).isoformat()), "OCCURRED_OUTSIDE_WINDOW"),
    ]
    for event, reason in broken:
        answer = await sender.send(event)
        assert answer.status_code == 200, answer.text
        assert answer.json()["data"]["verification"]["reason"] == reason
    seen = await verifications(api, token, instance_id)
    assert seen["status"] == "PENDING"
    assert [v["reason"] for v in seen["verifications"]] == [r for _, r in broken]

    accepted = await sender.send(activity())
    assert accepted.json()["data"]["verification"]["status"] == "ACCEPTED"


@both_backends
async def test_tampered_wrongly_signed_and_unknown_events_are_refused_alike(
    api: ApiClient, integrations: Deployment
) -> None:
    token, _ = await api.register()
    _, instance_id, sender = await connected_task(api, integrations.url, token)
    body = json.dumps(activity()).encode()
    headers = sender.signed(body)
    tampered = body.replace(b'"durationSeconds": 1800', b'"durationSeconds": 9800')
    unknown_url = sender.url.rsplit("/", 2)[0] + "/" + "A" * 32 + "/events"
    refusals = [
        await sender.post(tampered, headers),
        await sender.post(body, sender.signed(body, secret="a guess at the secret")),
        await sender.post(body, sender.signed(body), url=unknown_url),
        await sender.post(body, {**headers, "X-Proofloop-Signature": headers["X-Proofloop-Signature"][:-1]}),
        await sender.post(body, {k: v for k, v in headers.items() if k != "X-Proofloop-Signature"}),
    ]
    assert [r.status_code for r in refusals] == [401] * 5
    assert {code_of(r) for r in refusals} == {"UNAUTHENTICATED"}
    # a stranger learns nothing of which keys exist: a wrong signature reads as an unknown key
    assert len({r.json()["errors"][0]["message"] for r in refusals[:4]}) == 1
    assert (await verifications(api, token, instance_id))["verifications"] == []

    assert (await sender.post(body, headers)).status_code == 200  # the untouched request still counts


async def test_a_timestamp_outside_the_replay_window_is_refused(
    api: ApiClient, integrations: Deployment
) -> None:
    token, _ = await api.register()
    _, instance_id, sender = await connected_task(api, integrations.url, token)
    body = json.dumps(activity()).encode()
    now = int(time.time())
    for timestamp in (now - 360, now + 360, 0, 10**11):
        refused = await sender.post(body, sender.signed(body, timestamp=timestamp))
        assert (refused.status_code, code_of(refused)) == (401, "UNAUTHENTICATED")
    assert "300 s" in refused.json()["errors"][0]["message"]
    assert (await verifications(api, token, instance_id))["verifications"] == []


async def test_a_replayed_event_is_a_conflict_naming_the_proof_it_made(
    api: ApiClient, integrations: Deployment
) -> None:
    token, _ = await api.register()
    _, instance_id, sender = await connected_task(api, integrations.url, token)
    body = json.dumps(activity(type="ride")).encode()  # rejected: the instance stays open for the copies
    headers = sender.signed(body)
    first = (await sender.post(body, headers)).json()["data"]["verification"]

    same_request = await sender.post(body, headers)
    resigned = await sender.post(body)
    for replay in (same_request, resigned):
        assert (replay.status_code, code_of(replay)) == (409, "CONFLICT")
        assert replay.json()["errors"][0]["extensions"]["verificationId"] == first["id"]
    assert len((await verifications(api, token, instance_id))["verifications"]) == 1


@both_backends
async def test_concurrent_copies_of_an_event_make_one_proof(api: ApiClient, integrations: Deployment) -> None:
    token, _ = await api.register()
    _, instance_id, sender = await connected_task(api, integrations.url, token)
    body = json.dumps(activity()).encode()
    answers = await asyncio.gather(*(sender.post(body) for _ in range(8)))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] + [409] * 7, [a.text for a in answers]
    made = next(a for a in answers if a.status_code == 200).json()["data"]["verification"]["id"]
    # every copy learns which proof the event made, even one that found the instance already settled
    assert {
        a.json()["errors"][0]["extensions"]["verificationId"] for a in answers if a.status_code == 409
    } == {made}
    seen = await verifications(api, token, instance_id)
    assert (seen["status"], len(seen["verifications"])) == ("VERIFIED", 1)


async def test_a_tasks_events_per_day_hold_under_concurrent_requests(
    api: ApiClient, integrations: Deployment
) -> None:
    token, _ = await api.register()
    _, instance_id, sender = await connected_task(api, integrations.url, token)
    answers = await asyncio.gather(*(sender.send(activity(type="ride")) for _ in range(EVENTS_PER_DAY + 4)))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] * EVENTS_PER_DAY + [429] * 4
    refused = next(a for a in answers if a.status_code == 429)
    assert "PROOFLOOP_INTEGRATION_EVENTS_PER_DAY" in refused.json()["errors"][0]["message"]
    assert len((await verifications(api, token, instance_id))["verifications"]) == EVENTS_PER_DAY


async def test_one_address_is_held_to_its_requests_per_minute_before_anything_is_read(
    api: ApiClient, integrations: Deployment
) -> None:
    token, _ = await api.register()
    _, _, sender = await connected_task(api, integrations.url, token)
    junk = b"not even JSON"
    answers = [await sender.post(junk) for _ in range(REQUESTS_PER_MINUTE + 2)]
    assert [a.status_code for a in answers[:REQUESTS_PER_MINUTE]] == [400] * REQUESTS_PER_MINUTE
    for refused in answers[REQUESTS_PER_MINUTE:]:
        assert (refused.status_code, code_of(refused)) == (429, "RATE_LIMITED")
        assert int(refused.headers["Retry-After"]) > 0
    other = Sender(sender.url, sender.secret)  # another address is not held back
    assert (await other.send(activity())).status_code == 200


async def test_oversized_bodies_are_refused_unread(api: ApiClient, integrations: Deployment) -> None:
    token, _ = await api.register()
    _, instance_id, sender = await connected_task(api, integrations.url, token)
    huge = json.dumps(activity(note="x" * 20_000)).encode()
    declared = await sender.post(huge)

    async def trickle() -> AsyncIterator[bytes]:  # no Content-Length: the limit applies as it arrives
        for start in range(0, len(huge), 4096):
            yield huge[start : start + 4096]

    async with local_http(timeout=10) as client:
        streamed = await client.post(sender.url, content=trickle(), headers=sender.signed(huge))
    for refused in (declared, streamed):
        assert (refused.status_code, code_of(refused)) == (413, "PAYLOAD_TOO_LARGE")
    assert (await verifications(api, token, instance_id))["verifications"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"[1, 2]", "body"),
        (b'"run"', "body"),
        (b"\xff\xfe{}", "body"),
        (b"[" * 5000 + b"]" * 5000, "body"),
        (
            b'{"id": "a", "occurredAt": "2026-01-01T00:00:00Z", "durationSeconds": NaN}',
            "body.durationSeconds",
        ),
        (json.dumps({"occurredAt": "2026-01-01T00:00:00+00:00"}).encode(), "body.id"),
        (json.dumps({"id": "a\x00b", "occurredAt": "2026-01-01T00:00:00+00:00"}).encode(), "body.id"),
        (json.dumps({"id": "x" * 201, "occurredAt": "2026-01-01T00:00:00+00:00"}).encode(), "body.id"),
        (json.dumps({"id": "a", "occurredAt": "2026-01-01T00:00:00"}).encode(), "body.occurredAt"),
        (json.dumps({"id": "a", "occurredAt": "0001-01-01T00:00:00+14:00"}).encode(), "body.occurredAt"),
        (json.dumps({"id": "a", "occurredAt": "2999-01-01T00:00:00+00:00"}).encode(), "body.occurredAt"),
        (json.dumps({"id": "a", "occurredAt": 17}).encode(), "body.occurredAt"),
        (json.dumps(activity(durationSeconds=-1)).encode(), "body.durationSeconds"),
        (json.dumps(activity(distanceMeters=True)).encode(), "body.distanceMeters"),
        (json.dumps(activity(type="")).encode(), "body.type"),
    ],
)
async def test_malformed_events_are_bad_input_naming_the_field(
    api: ApiClient, integrations: Deployment, body: bytes, field: str
) -> None:
    token, _ = await api.register()
    _, instance_id, sender = await connected_task(api, integrations.url, token)
    refused = await sender.post(body)
    assert (refused.status_code, code_of(refused)) == (400, "BAD_USER_INPUT"), refused.text
    assert refused.json()["errors"][0]["extensions"]["field"] == field
    assert (await verifications(api, token, instance_id))["verifications"] == []
    async with local_http(timeout=5) as client:
        assert (await client.get(f"{integrations.url}/healthz")).status_code == 200


async def test_only_the_owner_connects_and_a_new_connection_retires_the_old(
    api: ApiClient, integrations: Deployment
) -> None:
    owner, _, partner, _ = await partner_pair(api)
    stranger, _ = await api.register()
    task_id, _, old = await connected_task(api, integrations.url, owner)
    for token, code in ((partner, "FORBIDDEN"), (stranger, "NOT_FOUND")):
        with pytest.raises(GraphQLFailure) as refused:
            await api.execute(CONNECT, {"id": task_id}, token=token)
        assert refused.value.code == code
    photo_task, _ = await create_open_task(api, owner, "PHOTO")
    with pytest.raises(GraphQLFailure) as not_integration:
        await api.execute(CONNECT, {"id": photo_task}, token=owner)
    assert (not_integration.value.code, not_integration.value.field) == ("BAD_USER_INPUT", "taskId")

    connection = (await api.execute(CONNECT, {"id": task_id}, token=owner))["connectIntegration"]
    path = connection["endpointUrl"].split("://", 1)[1].split("/", 1)[1]
    new = Sender(f"{integrations.url}/{path}", connection["secret"])
    assert (await old.send(activity())).status_code == 401
    assert (await Sender(new.url, old.secret).send(activity())).status_code == 401
    assert (await new.send(activity())).status_code == 200


async def test_a_paused_task_has_nothing_to_prove(api: ApiClient, integrations: Deployment) -> None:
    token, _ = await api.register()
    task_id, _, sender = await connected_task(api, integrations.url, token)
    await api.execute("mutation($id: ID!) { pauseTask(id: $id) { state } }", {"id": task_id}, token=token)
    refused = await sender.send(activity())
    assert (refused.status_code, code_of(refused)) == (409, "CONFLICT")
    await api.execute("mutation($id: ID!) { deleteTask(id: $id) }", {"id": task_id}, token=token)
    gone = await sender.send(activity())
    assert (gone.status_code, code_of(gone)) == (401, "UNAUTHENTICATED")


async def test_an_easier_rule_waits_out_the_horizon_and_a_harder_one_applies_at_once(
    api: ApiClient, integrations: Deployment
) -> None:
    token, _ = await api.register()
    task_id, _, _ = await connected_task(api, integrations.url, token)
    await api.execute("mutation { setCommitmentHorizon(days: 2) { id } }", token=token)
    update = "mutation($id: ID!, $r: IntegrationRuleInput!) { updateTask(id: $id, input: {integration: $r}) { id } }"
    harder: dict[str, Any] = {"activityTypes": ["run"], "minDurationSeconds": 900, "minDistanceMeters": 3000}
    await api.execute(update, {"id": task_id, "r": harder}, token=token)
    task = (await api.execute(TASK, {"id": task_id}, token=token))["task"]
    assert task["integration"]["activityTypes"] == ["run"]
    assert task["integration"]["minDurationSeconds"] == 900
    assert task["pendingChange"] is None

    easier_rules: list[dict[str, Any]] = [
        {**harder, "activityTypes": ["run", "walk"]},
        {**harder, "activityTypes": []},
        {**harder, "minDistanceMeters": 100},
    ]
    for easier in easier_rules:
        await api.execute(update, {"id": task_id, "r": easier}, token=token)
        task = (await api.execute(TASK, {"id": task_id}, token=token))["task"]
        assert task["integration"]["activityTypes"] == ["run"], easier
        assert task["pendingChange"]["integration"]["activityTypes"] == sorted(easier["activityTypes"])
        assert task["pendingChange"]["integration"]["minDistanceMeters"] == easier["minDistanceMeters"]

    with pytest.raises(GraphQLFailure) as refused:
        await api.execute(update, {"id": task_id, "r": {"activityTypes": ["x" * 65]}}, token=token)
    assert (refused.value.code, refused.value.field) == ("BAD_USER_INPUT", "input.integration.activityTypes")
    photo_task, _ = await create_open_task(api, token, "PHOTO", open_schedule())
    with pytest.raises(GraphQLFailure) as wrong_method:
        await api.execute(update, {"id": photo_task, "r": harder}, token=token)
    assert (wrong_method.value.code, wrong_method.value.field) == ("BAD_USER_INPUT", "input.integration")


async def test_the_example_connector_proves_once_and_recognizes_its_retry(
    api: ApiClient, integrations: Deployment
) -> None:
    token, _ = await api.register()
    _, instance_id, sender = await connected_task(api, integrations.url, token)
    command = [
        sys.executable,
        str(ROOT / "examples" / "send_activity.py"),
        "--url",
        sender.url,
        f"--secret={sender.secret}",  # one secret in 64 starts with "-"
        "--type",
        "Run",
        "--duration",
        "1800",
        "--distance",
        "5200",
        "--id",
        f"workout-{uuid.uuid4().hex[:8]}",
    ]

    async def run() -> tuple[int, str]:
        child = await asyncio.create_subprocess_exec(
            *command, env=child_env({}), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        out, _ = await asyncio.wait_for(child.communicate(), 30)
        return child.returncode or 0, out.decode()

    first, retried = await run(), await run()
    assert first[0] == 0 and first[1].startswith("ACCEPTED"), first
    made = first[1].split()[-1]
    assert retried == (0, f"already recorded as verification {made}\n")
    seen = await verifications(api, token, instance_id)
    assert [(v["id"], v["activity"]["source"]) for v in seen["verifications"]] == [(made, "send_activity")]

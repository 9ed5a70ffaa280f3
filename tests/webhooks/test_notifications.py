"""Webhooks for everyone who may see an event, through the real API and workers with real receivers: the
event types a webhook chooses, partners told of what they may read and nothing else, payloads that name
the recipient, a test ping, the delivery log and redelivery."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from harness.chain_support import eventually
from harness.mailbox import Mailbox
from harness.private_services import local_receivers_env
from harness.proofloop import (
    ROOT,
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    WorkerProcess,
    create_open_task,
    free_port,
    partner_pair,
)
from tests.support.reminders import Receiver, receiving, verify_signature

TRIES_PER_HOUR = 6
REGISTER = """mutation($url: String!, $secret: String, $types: [EventType!]) {
  registerWebhook(input: { url: $url, secret: $secret, eventTypes: $types }) {
    secret webhook { id eventTypes }
  }
}"""
PING = "mutation($id: ID!) { pingWebhook(id: $id) { id kind status attempts } }"
REDELIVER = "mutation($id: ID!) { redeliverWebhookDelivery(id: $id) { id kind status attempts lastError } }"
LOG = """query { webhooks { id deliveries(first: 10) {
  edges { node { id kind status attempts lastError createdAt finishedAt } }
} } }"""
EVENTS = "query { events(first: 100) { id type user { id } } }"
CREATE = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id currentInstance { id } } }"
SUBMIT_REVIEW = 'mutation($id: ID!) { requestReview(instanceId: $id, note: "done") { id } }'
INVITE = "mutation($e: String!) { invitePartner(email: $e) { id } }"
ACCEPT = "mutation($id: ID!) { respondToInvite(partnershipId: $id, accept: true) { status } }"
CHECK_IN = """mutation($id: ID!) {
  checkIn(instanceId: $id, location: {latitude: 52.52, longitude: 13.405}, accuracyMeters: 10) { status }
}"""
SECRET = "a shared secret of some length"


@pytest.fixture(scope="module")
def env(service_env: dict[str, str]) -> Iterator[dict[str, str]]:
    """A database and Redis of their own: this module's workers send to receivers on 127.0.0.1, which the
    run's own worker (production address rules) would refuse."""
    with local_receivers_env(
        service_env,
        "proofloop_notify",
        {
            "PROOFLOOP_WEBHOOK_BACKOFF_SECONDS": "0.2",
            "PROOFLOOP_WEBHOOK_MAX_ATTEMPTS": "2",
            "PROOFLOOP_WEBHOOK_TRIES_PER_HOUR": str(TRIES_PER_HOUR),
        },
    ) as env:
        yield env


@pytest.fixture(scope="module")
def api_server(env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


@pytest.fixture
async def api(api_server: ServerProcess, mailbox: Mailbox) -> AsyncIterator[ApiClient]:
    async with ApiClient(api_server.url, mailbox) as client:
        yield client


@pytest.fixture(scope="module")
def worker(env: dict[str, str], api_server: ServerProcess) -> Iterator[WorkerProcess]:
    with WorkerProcess(env) as proc:
        yield proc


async def register(api: ApiClient, token: str, receiver: Receiver, types: list[str] | None) -> str:
    variables = {"url": receiver.url, "secret": SECRET, "types": types}
    hook: dict[str, Any] = (await api.execute(REGISTER, variables, token=token))["registerWebhook"]
    return str(hook["webhook"]["id"])


def bodies(receiver: Receiver) -> list[dict[str, Any]]:
    return [json.loads(body) for _, body in receiver.requests]


def one_off(title: str, starts_in: int, window: int, reminders: list[dict[str, Any]]) -> dict[str, Any]:
    starts = (datetime.now(UTC) + timedelta(seconds=starts_in)).replace(microsecond=0)
    return {
        "title": title,
        "method": "PHOTO",
        "schedule": {"startsAt": starts.isoformat(), "windowSeconds": window, "graceSeconds": 0},
        "reminders": reminders,
    }


async def test_a_partners_webhook_carries_what_the_partner_may_read_and_nothing_else(
    api: ApiClient, worker: WorkerProcess
) -> None:
    owner, owner_id, partner, partner_id = await partner_pair(api)
    stranger, _ = await api.register()
    everything = ["DUE_SOON", "MISSED", "VERIFIED", "REJECTED", "REVIEW_REQUESTED", "PROOF_SUBMITTED"]
    with receiving() as at_owner, receiving() as at_partner, receiving() as at_stranger:
        await register(api, owner, at_owner, ["MISSED", "DUE_SOON"])
        await register(api, partner, at_partner, everything)
        await register(api, stranger, at_stranger, everything)
        # a reminder at the window's opening (the owner's alone), then MISSED at the deadline
        task = await api.execute(
            CREATE,
            {"input": one_off("Run", 6, 2, [{"before": "OPENS", "offsetSeconds": 0}])},
            token=owner,
        )
        await at_partner.wait_for(1)
        await at_owner.wait_for(2)
        await asyncio.sleep(1.5)  # two pump ticks: anything else on its way would have come

    partner_bodies, owner_bodies = bodies(at_partner), bodies(at_owner)
    assert [b["type"] for b in partner_bodies] == ["MISSED"]  # never the owner's DUE_SOON
    assert sorted(b["type"] for b in owner_bodies) == ["DUE_SOON", "MISSED"]
    assert at_stranger.requests == []
    missed = partner_bodies[0]
    assert missed["recipient"] == {"id": partner_id, "role": "PARTNER"}
    assert missed["user"]["id"] == owner_id
    assert missed["task"]["id"] == task["createTask"]["id"]
    assert missed["instance"] == {
        "id": task["createTask"]["currentInstance"]["id"],
        "status": "MISSED",
        "dueAt": missed["instance"]["dueAt"],
    }
    # the event the partner reads through the API, by the same id
    partner_events = (await api.execute(EVENTS, token=partner))["events"]
    assert missed["event"]["id"] in [e["id"] for e in partner_events if e["type"] == "MISSED"]
    for headers, body in at_partner.requests:
        assert verify_signature(SECRET, headers, body)
        assert headers["x-proofloop-delivery"] == json.loads(body)["deliveryId"]
    owner_missed = next(b for b in owner_bodies if b["type"] == "MISSED")
    assert owner_missed["recipient"] == {"id": owner_id, "role": "OWNER"}
    assert owner_missed["event"] == missed["event"]
    assert next(b for b in owner_bodies if b["type"] == "DUE_SOON")["recipient"]["role"] == "OWNER"


async def test_an_event_from_before_the_partnership_reaches_only_the_owner(
    api: ApiClient, worker: WorkerProcess
) -> None:
    owner, _ = await api.register()
    partner, partner_user = await api.register_verified()
    types = ["PROOF_SUBMITTED", "REVIEW_REQUESTED"]
    with receiving() as at_owner, receiving() as at_partner:
        await register(api, owner, at_owner, types)
        await register(api, partner, at_partner, types)
        worker.stop()  # nothing is fanned out until the partnership exists
        try:
            _, before = await create_open_task(api, owner, "GPS")
            await api.execute(CHECK_IN, {"id": before}, token=owner)  # PROOF_SUBMITTED, before it
            invite = await api.execute(INVITE, {"e": partner_user["email"]}, token=owner)
            await api.execute(ACCEPT, {"id": invite["invitePartner"]["id"]}, token=partner)
            _, after = await create_open_task(api, owner, "PARTNER")
            await api.execute(SUBMIT_REVIEW, {"id": after}, token=owner)  # and after it
        finally:
            worker.start()
        await at_owner.wait_for(2)
        await at_partner.wait_for(1)
        await asyncio.sleep(1.5)  # two pump ticks: anything else on its way would have come
    assert {b["instance"]["id"] for b in bodies(at_owner)} == {before, after}
    partner_bodies = bodies(at_partner)
    assert {b["instance"]["id"] for b in partner_bodies} == {after}
    assert "REVIEW_REQUESTED" in [b["type"] for b in partner_bodies]


async def test_a_ping_is_logged_given_up_and_redelivered_with_the_same_id(
    api: ApiClient, worker: WorkerProcess
) -> None:
    token, user = await api.register()
    stranger, _ = await api.register()
    with receiving(status=500) as receiver:
        hook_id = await register(api, token, receiver, None)
        ping = (await api.execute(PING, {"id": hook_id}, token=token))["pingWebhook"]
        assert (ping["kind"], ping["status"], ping["attempts"]) == ("PING", "PENDING", 0)

        async def given_up() -> bool:
            log = (await api.execute(LOG, token=token))["webhooks"][0]["deliveries"]["edges"]
            return bool(log and log[0]["node"]["status"] == "GIVEN_UP")

        await eventually(given_up, 30, "the ping is given up after its 2 attempts")
        (entry,) = (await api.execute(LOG, token=token))["webhooks"][0]["deliveries"]["edges"]
        assert entry["node"]["id"] == ping["id"]
        assert entry["node"]["attempts"] == 2
        assert "500" in entry["node"]["lastError"]
        assert entry["node"]["finishedAt"] is not None
        first_body = receiver.requests[0][1]
        payload = json.loads(first_body)
        assert payload["type"] == "PING" and payload["recipient"] == {"id": user["id"], "role": "OWNER"}

        for document, variables in ((PING, {"id": hook_id}), (REDELIVER, {"id": ping["id"]})):
            with pytest.raises(GraphQLFailure) as failure:  # someone else's: as if it did not exist
                await api.execute(document, variables, token=stranger)
            assert failure.value.code == "NOT_FOUND"

        receiver.status = 204
        worker.stop()  # the redelivery stays owed until the worker is back, however fast the receiver
        try:
            again = (await api.execute(REDELIVER, {"id": ping["id"]}, token=token))[
                "redeliverWebhookDelivery"
            ]
            assert (again["id"], again["status"], again["attempts"], again["lastError"]) == (
                ping["id"],
                "PENDING",
                0,
                None,
            )
            with pytest.raises(GraphQLFailure) as failure:  # owed again: not twice at once
                await api.execute(REDELIVER, {"id": ping["id"]}, token=token)
            assert failure.value.code == "CONFLICT"
        finally:
            worker.start()

        async def delivered() -> bool:
            log = (await api.execute(LOG, token=token))["webhooks"][0]["deliveries"]["edges"]
            return bool(log[0]["node"]["status"] == "DELIVERED")

        await eventually(delivered, 30, "the redelivery reaches the receiver")
    last_headers, last_body = receiver.requests[-1]
    assert last_body == first_body  # as signed the first time
    assert last_headers["x-proofloop-delivery"] == payload["deliveryId"]
    assert verify_signature(SECRET, last_headers, last_body)


async def test_concurrent_redeliveries_send_once(api: ApiClient, worker: WorkerProcess) -> None:
    token, _ = await api.register()
    with receiving() as receiver:
        hook_id = await register(api, token, receiver, None)
        ping = (await api.execute(PING, {"id": hook_id}, token=token))["pingWebhook"]
        await receiver.wait_for(1)

        async def finished() -> bool:
            log = (await api.execute(LOG, token=token))["webhooks"][0]["deliveries"]["edges"]
            return bool(log[0]["node"]["status"] == "DELIVERED")

        await eventually(finished, 30, "the ping is delivered")
        # no worker while the copies race: the first one's redelivery stays owed (a fast receiver could
        # otherwise finish it between two copies, and a later copy would rightly send it again)
        worker.stop()
        try:
            answers = await asyncio.gather(
                *(api.execute(REDELIVER, {"id": ping["id"]}, token=token) for _ in range(4)),
                return_exceptions=True,
            )
        finally:
            worker.start()
        refused = [a for a in answers if isinstance(a, GraphQLFailure)]
        assert len(refused) == 3 and {r.code for r in refused} == {"CONFLICT"}, answers
        await receiver.wait_for(2)
        await asyncio.sleep(1.5)
    assert len(receiver.requests) == 2


async def test_pings_and_redeliveries_are_limited_per_user(api: ApiClient, worker: WorkerProcess) -> None:
    token, _ = await api.register()
    with receiving() as receiver:
        hook_id = await register(api, token, receiver, None)
        for _ in range(TRIES_PER_HOUR):
            await api.execute(PING, {"id": hook_id}, token=token)
        with pytest.raises(GraphQLFailure) as failure:
            await api.execute(PING, {"id": hook_id}, token=token)
        assert failure.value.code == "RATE_LIMITED"
        other, _ = await api.register()  # one user's limit is theirs alone
        other_hook = await register(api, other, receiver, None)
        await api.execute(PING, {"id": other_hook}, token=other)


async def test_event_types_default_to_reminders_and_bad_ones_are_refused(api: ApiClient) -> None:
    token, _ = await api.register()
    with receiving() as receiver:
        created = await api.execute(REGISTER, {"url": receiver.url, "secret": SECRET}, token=token)
        assert created["registerWebhook"]["webhook"]["eventTypes"] == ["DUE_SOON"]
        chosen = await api.execute(
            REGISTER, {"url": receiver.url, "types": ["MISSED", "MISSED", "VERIFIED"]}, token=token
        )
        assert chosen["registerWebhook"]["webhook"]["eventTypes"] == ["MISSED", "VERIFIED"]
        with pytest.raises(GraphQLFailure) as failure:
            await api.execute(REGISTER, {"url": receiver.url, "types": []}, token=token)
        assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "input.eventTypes")
        with pytest.raises(GraphQLFailure) as failure:
            await api.execute(REGISTER, {"url": receiver.url, "types": ["EVERYTHING"]}, token=token)
        assert failure.value.code == "BAD_USER_INPUT"
        listed = (await api.execute("{ webhooks { eventTypes } }", token=token))["webhooks"]
        assert [w["eventTypes"] for w in listed] == [["DUE_SOON"], ["MISSED", "VERIFIED"]]


async def test_the_example_push_relay_forwards_each_delivery_once(
    api: ApiClient, worker: WorkerProcess, tmp_path: Path
) -> None:
    token, user = await api.register()
    devices = tmp_path / "devices.json"
    devices.write_text(json.dumps({user["id"]: ["device-1"]}))
    port = free_port()
    with receiving() as push_service, push_relay(port, devices, push_service.url):
        url = f"http://127.0.0.1:{port}/"
        hook = await api.execute(REGISTER, {"url": url, "secret": SECRET, "types": ["DUE_SOON"]}, token=token)
        await api.execute(PING, {"id": hook["registerWebhook"]["webhook"]["id"]}, token=token)
        ((_, pushed),) = await push_service.wait_for(1)
        message = json.loads(pushed)
        assert (message["to"], message["title"]) == ("device-1", "Proofloop test notification")
        assert message["data"]["recipient"]["id"] == user["id"]

        signed = message["data"]
        body = json.dumps(signed).encode()
        now = str(int(time.time()))
        good = "sha256=" + hmac.new(SECRET.encode(), f"{now}.".encode() + body, hashlib.sha256).hexdigest()
        async with aiohttp.ClientSession() as session:

            async def post(timestamp: str, signature: str, payload: bytes = body) -> int:
                headers = {"X-Proofloop-Timestamp": timestamp, "X-Proofloop-Signature": signature}
                async with session.post(url, data=payload, headers=headers) as answer:
                    return answer.status

            assert await post(now, good) == 204  # the same delivery id again: not forwarded twice
            assert await post(now, good, body + b" ") == 401  # tampered
            assert await post(str(int(time.time()) - 3600), good) == 401  # replayed an hour later
        await asyncio.sleep(0.5)
        assert len(push_service.requests) == 1


@contextmanager
def push_relay(port: int, devices: Path, push_url: str) -> Iterator[None]:
    """examples/push_relay.py as a user runs it, until the block ends."""
    script = ROOT / "examples" / "push_relay.py"
    args = ["--port", str(port), "--secret", SECRET, "--devices", str(devices), "--push-url", push_url]
    with subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, text=True) as relay:
        try:
            assert relay.stdout is not None and "listening" in relay.stdout.readline()
            yield
        finally:
            relay.terminate()
            relay.wait(timeout=10)


QUIET = """mutation($q: QuietHoursInput) {
  updateProfile(quietHours: $q) { user { quietHours { start end } } }
}"""


def clock(at: datetime) -> str:
    return f"{at:%H:%M}"


async def test_quiet_hours_hold_a_partners_notice_until_they_end(
    api: ApiClient, env: dict[str, str], worker: WorkerProcess
) -> None:
    owner, _, partner, _ = await partner_pair(api)  # both in UTC
    now = datetime.now(UTC)
    span = {"start": clock(now - timedelta(hours=1)), "end": clock(now + timedelta(hours=2))}
    quiet = await api.execute(QUIET, {"q": span}, token=partner)
    assert quiet["updateProfile"]["user"]["quietHours"] == span
    with receiving() as at_owner, receiving() as at_partner:
        await register(api, owner, at_owner, ["MISSED"])
        await register(api, partner, at_partner, ["MISSED"])
        await api.execute(CREATE, {"input": one_off("Quiet run", 5, 1, [])}, token=owner)
        await at_owner.wait_for(1)  # the owner has no quiet hours: told at once
        await asyncio.sleep(1.5)
        assert at_partner.requests == []  # the partner's notice waits for the end of the span
        log = (await api.execute(LOG, token=partner))["webhooks"][0]["deliveries"]["edges"]
        assert [(e["node"]["kind"], e["node"]["status"], e["node"]["attempts"]) for e in log] == [
            ("MISSED", "PENDING", 0)
        ]
        connection = await asyncpg.connect(env["PROOFLOOP_DATABASE_URL"])
        try:
            fire_at = await connection.fetchval(
                "SELECT d.fire_at FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id"
                " WHERE w.url = $1",
                at_partner.url,
            )
            ends = now.replace(second=0, microsecond=0) + timedelta(hours=2)
            assert fire_at == ends  # today's end of the span, on the partner's wall clock
            # the span ends (its instant moved to now): the pump hands the delivery over
            await connection.execute(
                "UPDATE webhook_deliveries SET fire_at = now() WHERE webhook_id IN"
                " (SELECT id FROM webhooks WHERE url = $1)",
                at_partner.url,
            )
        finally:
            await connection.close()
        ((_, body),) = await at_partner.wait_for(1)
    assert json.loads(body)["type"] == "MISSED"
    cleared = await api.execute(QUIET, {"q": None}, token=partner)
    assert cleared["updateProfile"]["user"]["quietHours"] is None


@pytest.mark.parametrize(
    ("span", "field"),
    [
        ({"start": "25:00", "end": "07:00"}, "quietHours.start"),
        ({"start": "22:00", "end": "7:00"}, "quietHours.end"),
        ({"start": "22:00", "end": "22:00"}, "quietHours"),
    ],
)
async def test_bad_quiet_hours_are_refused_and_change_nothing(
    api: ApiClient, span: dict[str, str], field: str
) -> None:
    token, _ = await api.register()
    await api.execute(QUIET, {"q": {"start": "22:00", "end": "07:00"}}, token=token)
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(QUIET, {"q": span}, token=token)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", field)
    kept = await api.execute("query { me { quietHours { start end } } }", token=token)
    assert kept["me"]["quietHours"] == {"start": "22:00", "end": "07:00"}


async def test_quiet_hours_hold_an_owners_reminder_too(
    api: ApiClient, env: dict[str, str], worker: WorkerProcess
) -> None:
    token, _ = await api.register()
    now = datetime.now(UTC)
    span = {"start": clock(now - timedelta(hours=1)), "end": clock(now + timedelta(hours=3))}
    await api.execute(QUIET, {"q": span}, token=token)
    with receiving() as receiver:
        await register(api, token, receiver, ["DUE_SOON"])
        reminder = [{"before": "OPENS", "offsetSeconds": 0}]
        await api.execute(CREATE, {"input": one_off("Quiet reminder", 6, 3, reminder)}, token=token)

        async def logged() -> bool:
            log = (await api.execute(LOG, token=token))["webhooks"][0]["deliveries"]["edges"]
            return bool(log)

        await eventually(logged, 30, "the reminder fires and writes its delivery")
        await asyncio.sleep(1.5)
        assert receiver.requests == []  # held for the end of the span
    connection = await asyncpg.connect(env["PROOFLOOP_DATABASE_URL"])
    try:
        row = await connection.fetchrow(
            "SELECT d.kind, d.status, d.fire_at, d.link_no FROM webhook_deliveries d"
            " JOIN webhooks w ON w.id = d.webhook_id WHERE w.url = $1",
            receiver.url,
        )
    finally:
        await connection.close()
    assert row is not None and (row["kind"], row["status"], row["link_no"]) == ("DUE_SOON", "PENDING", 0)
    assert row["fire_at"] == now.replace(second=0, microsecond=0) + timedelta(hours=3)

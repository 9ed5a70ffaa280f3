"""One rule for every instant the API hands out: UTC with a `Z`, over HTTP, over a subscription and in webhook
bodies, whatever the task's zone. The schema's own list of DateTime fields says which ones must be read, so a
field added later without being read here fails this test."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from gql import Client, GraphQLRequest
from gql.transport.websockets import WebsocketsTransport

from harness import media_factory
from harness.mailbox import Mailbox
from harness.proofloop import (
    BERLIN,
    ApiClient,
    ServerProcess,
    WorkerProcess,
    create_open_task,
    file_var,
    free_port,
    migrated_database,
    open_schedule,
    partner_pair,
    upload,
)
from tests.support.avoid_a_place import avoid_rule, judged, report, sample, soon
from tests.support.commitment_horizon import set_horizon
from tests.support.integrations import activity, connected_task
from tests.support.live import ws_url
from tests.support.reminders import REGISTER_WEBHOOK, one_off, receiving
from tests.support.reviews import request_review, review

UTC_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$")
ZONE = "Asia/Kolkata"  # +05:30: an offset no UTC rendering could pass for
INSTANCE = (
    "__typename id opensAt dueAt closesAt reviewDeadline settledAt"
    " verdict { __typename settledAt appealableUntil }"
)
VERIFICATION = f"__typename id submittedAt decidedAt instance {{ {INSTANCE} }}"
TASK = f"""query($id: ID!) {{ task(id: $id) {{
  __typename createdAt upcoming(first: 3)
  schedule {{ __typename startsAt timezone }}
  pendingChange {{ __typename effectiveAt schedule {{ __typename startsAt }} }}
  instances(first: 10) {{ edges {{ node {{ {INSTANCE} verifications {{ {VERIFICATION} }} }} }} }}
}} }}"""
EVENT = f"__typename id type occurredAt dueAt task {{ id }} instance {{ {INSTANCE} }} verification {{ {VERIFICATION} }}"
EVENTS = f"query($task: ID) {{ events(taskId: $task, first: 100) {{ {EVENT} }} }}"
SUBSCRIBE = f"subscription {{ verificationEvents {{ {EVENT} }} }}"
ACCOUNT = """query {
  me { __typename commitmentHorizon { __typename loweringAt } }
  sessions { __typename createdAt expiresAt lastUsedAt }
  partnerships { __typename createdAt }
  webhooks { __typename createdAt deliveries(first: 5) { edges { node { __typename createdAt finishedAt } } } }
  pushSubscriptions { edges { node { __typename createdAt } } }
}"""
# a browser's subscription: a P-256 point (the generator) and a 16-byte secret, as PushManager gives them
PUSH = """mutation($endpoint: String!) {
  pushSubscriptionRegister(input: {endpoint: $endpoint, keys: {auth: "AAAAAAAAAAAAAAAAAAAAAA",
    p256dh: "BGsX0fLhLEJH-Lzm5WOkQPJ3A32BLeszoPShOUXYmMKWT-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU"}}) {
    userErrors { message }
  }
}"""
EXPORTS_QUERY = "query { dataExports { __typename requestedAt readyAt expiresAt } }"
CREATE = """mutation($input: CreateTaskInput!) {
  createTask(input: $input) { id schedule { startsAt } currentInstance { id } }
}"""
INSTANCE_QUERY = f"query($id: ID!) {{ instance(id: $id) {{ {INSTANCE} }} }}"
UPDATE = "mutation($id: ID!, $input: UpdateTaskInput!) { updateTask(id: $id, input: $input) { id } }"
PROOF_INSTANTS = """query($id: ID!) { instance(id: $id) { verifications {
  __typename capturedAt enteredAt activity { __typename occurredAt } } } }"""
SUBMIT_PHOTO = (
    "mutation($id: ID!, $photo: Upload!) { submitPhoto(instanceId: $id, photo: $photo) { status } }"
)
BREAK = """mutation($in: ScheduleBreakInput!) { scheduleBreak(input: $in) {
  __typename appliesFrom endsAt createdAt } }"""
DATETIME_FIELDS = """{ __schema { types { name kind fields {
  name type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }
} } } }"""


@pytest.fixture(scope="module")
def env(service_env: dict[str, str], spare_redis_url: str) -> Iterator[dict[str, str]]:
    """A database and Redis of their own, so this module's worker alone delivers its plain-http webhooks."""
    with migrated_database("proofloop_timestamps") as url:
        yield {
            **service_env,
            "PROOFLOOP_DATABASE_URL": url,
            "PROOFLOOP_REDIS_URL": spare_redis_url,
            "PROOFLOOP_WEBHOOK_ALLOW_INSECURE": "true",
            "PROOFLOOP_WORKER_METRICS_PORT": str(free_port()),
        }


@pytest.fixture(scope="module")
def stamped_server(env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess(env, port=free_port()) as proc, WorkerProcess(env):
        yield proc


@pytest.fixture
def api(stamped_server: ServerProcess, mailbox: Mailbox) -> ApiClient:
    return ApiClient(stamped_server.url, mailbox)


def is_utc_z(value: object) -> bool:
    """Written in UTC with a Z, and an instant Python reads back as UTC."""
    if not (isinstance(value, str) and UTC_Z.match(value)):
        return False
    return datetime.fromisoformat(value).utcoffset() == timedelta(0)


def named_type(ref: dict[str, Any]) -> str | None:
    while ref.get("ofType"):
        ref = ref["ofType"]
    name: str | None = ref.get("name")
    return name


async def datetime_fields(api: ApiClient) -> set[str]:
    """`Type.field` of every output field whose type is DateTime (or a list of it), from introspection."""
    types = (await api.execute(DATETIME_FIELDS))["__schema"]["types"]
    return {
        f"{t['name']}.{f['name']}"
        for t in types
        if t["kind"] in ("OBJECT", "INTERFACE") and not t["name"].startswith("__")
        for f in t["fields"] or []
        if named_type(f["type"]) == "DateTime"
    }


def read_datetimes(value: object, wanted: set[str], found: dict[str, list[object]]) -> None:
    """Every DateTime-typed value under `value`, by `Type.field` (objects carry __typename)."""
    if isinstance(value, list):
        for item in value:
            read_datetimes(item, wanted, found)
    elif isinstance(value, dict):
        typename = value.get("__typename")
        for key, item in value.items():
            name = f"{typename}.{key}"
            if name in wanted and item is not None:
                found.setdefault(name, []).extend(item if isinstance(item, list) else [item])
            else:
                read_datetimes(item, wanted, found)


def payload_instants(value: object) -> list[object]:
    """Every `...At` value of a webhook body, however deep."""
    if isinstance(value, dict):
        return [
            found
            for key, item in value.items()
            for found in ([item] if key.endswith("At") else payload_instants(item))
        ]
    if isinstance(value, list):
        return [found for item in value for found in payload_instants(item)]
    return []


async def read_proof_and_break_instants(
    api: ApiClient, server: ServerProcess, owner: str, wanted: set[str], found: dict[str, list[object]]
) -> None:
    """An integration's activity (its time given at +05:30), a photo's capture time, an avoided place's
    entry and a break's instants."""
    zoned = {**open_schedule(), "timezone": ZONE}
    _, avoided = await create_open_task(api, owner, "GPS", soon(20), gps=avoid_rule())
    await report(api, owner, avoided, [sample(BERLIN, 2)])
    _, instance_id, sender = await connected_task(api, server, owner, {})
    occurred = (datetime.now(UTC) - timedelta(minutes=2)).astimezone(ZoneInfo(ZONE)).isoformat()
    assert (await sender.send(activity(occurredAt=occurred))).status_code == 200
    photo_task, photo_instance = await create_open_task(api, owner, "PHOTO", zoned)
    taken = (datetime.now(UTC) - timedelta(minutes=3)).astimezone(ZoneInfo(ZONE)).replace(tzinfo=None)
    photo = media_factory.photo_with_exif(71, taken=taken, offset="+05:30")
    await upload(api, SUBMIT_PHOTO, {"id": photo_instance, "photo": file_var(photo)}, token=owner)
    await judged(api, owner, avoided)
    for instance in (instance_id, photo_instance, avoided):
        read_datetimes(await api.execute(PROOF_INSTANTS, {"id": instance}, token=owner), wanted, found)
    later = (datetime.now(UTC) + timedelta(days=20)).date().isoformat()
    made = await api.execute(
        BREAK, {"in": {"taskId": photo_task, "startsOn": later, "endsOn": later}}, token=owner
    )
    read_datetimes(made, wanted, found)


@contextlib.asynccontextmanager
async def subscribed(server: ServerProcess, token: str) -> AsyncIterator[asyncio.Queue[Any]]:
    """The user's live events, each put in the queue as it arrives."""
    transport = WebsocketsTransport(
        url=ws_url(server),
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
        init_payload={"Authorization": f"Bearer {token}"},
    )
    client = Client(transport=transport, fetch_schema_from_transport=False)
    session = await client.connect_async()  # type: ignore[no-untyped-call]
    received: asyncio.Queue[Any] = asyncio.Queue()

    async def drain() -> None:
        async for result in session.subscribe(GraphQLRequest(SUBSCRIBE)):
            await received.put(result["verificationEvents"])

    draining = asyncio.create_task(drain())
    try:
        yield received
    finally:
        draining.cancel()
        with contextlib.suppress(BaseException):
            await draining
        with contextlib.suppress(Exception):
            await client.close_async()  # type: ignore[no-untyped-call]


async def test_every_datetime_the_api_returns_is_utc_with_a_z(
    api: ApiClient, stamped_server: ServerProcess
) -> None:
    owner, _, partner, _ = await partner_pair(api)
    starts = (datetime.now(UTC) + timedelta(seconds=30)).replace(microsecond=0)
    schedule = {
        "startsAt": starts.astimezone(ZoneInfo(ZONE)).isoformat(),  # given in the zone's offset
        "rrule": "FREQ=DAILY",
        "timezone": ZONE,
        "windowSeconds": 3600,
        "graceSeconds": 60,
    }
    task_input = {
        "title": "Stretch",
        "method": "PARTNER",
        "schedule": schedule,
        "partnerReview": {"reviewWindowSeconds": 3600, "onTimeout": "REJECT"},
    }
    # a reminder at the opening of a one-off due in 5 s: its webhook body comes within seconds
    hooked = {
        "title": "Hooked",
        "method": "PHOTO",
        "schedule": {**one_off(window=3, starts_in=5), "timezone": ZONE},
        "reminders": [{"before": "OPENS", "offsetSeconds": 0}],
    }
    wanted = await datetime_fields(api)
    found: dict[str, list[object]] = {}
    with receiving() as receiver:
        await api.execute(REGISTER_WEBHOOK, {"url": receiver.url}, token=owner)
        # a push service nobody runs: its deliveries never reach the webhook receiver read below
        pushed = await api.execute(PUSH, {"endpoint": "http://127.0.0.1:8080/push"}, token=owner)
        assert pushed["pushSubscriptionRegister"]["userErrors"] == []
        await api.execute(CREATE, {"input": hooked}, token=owner)
        task = (await api.execute(CREATE, {"input": task_input}, token=owner))["createTask"]
        assert task["schedule"]["startsAt"] == starts.strftime("%Y-%m-%dT%H:%M:%SZ")
        instance_id = task["currentInstance"]["id"]
        async with subscribed(stamped_server, owner) as live:
            # one of the one-off's events (its reminder, or its MISSED at 5 s) shows the subscription is live
            read_datetimes(await asyncio.wait_for(live.get(), 20), wanted, found)
            requested = await request_review(api, owner, instance_id)
            read_datetimes(await api.execute(INSTANCE_QUERY, {"id": instance_id}, token=owner), wanted, found)
            await review(api, partner, requested["id"], True)
            seen: list[str] = []
            while "VERIFIED" not in seen:  # the review's events, after the one-off's
                event = await asyncio.wait_for(live.get(), 15)
                read_datetimes(event, wanted, found)
                if event["task"]["id"] == task["id"]:
                    seen.append(event["type"])
            assert seen[0] == "REVIEW_REQUESTED"
        ((_, body),) = await receiver.wait_for(1)
        for _ in range(100):  # the delivery log records the answer a moment after the receiver sent it
            hooks = (await api.execute(ACCOUNT, token=owner))["webhooks"]
            if hooks[0]["deliveries"]["edges"][0]["node"]["finishedAt"] is not None:
                break
            await asyncio.sleep(0.1)
    await set_horizon(api, owner, 2)
    fewer = {"schedule": {"rrule": "FREQ=DAILY;COUNT=2"}}  # fewer occurrences: waits out the horizon
    await api.execute(UPDATE, {"id": task["id"], "input": fewer}, token=owner)
    await set_horizon(api, owner, 0)  # lowering waits too: loweringAt
    for document, variables in ((TASK, {"id": task["id"]}), (EVENTS, {"task": task["id"]}), (ACCOUNT, {})):
        read_datetimes(await api.execute(document, variables, token=owner), wanted, found)
    await api.execute("mutation { requestDataExport { id } }", token=partner)  # a verified address
    for _ in range(150):  # built by the worker: readyAt and expiresAt come with its link
        exports = (await api.execute(EXPORTS_QUERY, token=partner))["dataExports"]
        if exports[0]["readyAt"] is not None:
            break
        await asyncio.sleep(0.2)
    read_datetimes(exports, wanted, found)
    leaving, _ = await api.register()  # its devices are signed out: an account of its own
    deleting = (
        'mutation { requestAccountDeletion(password: "correct horse battery") { __typename deletionDueAt } }'
    )
    read_datetimes(await api.execute(deleting, token=leaving), wanted, found)
    await read_proof_and_break_instants(api, stamped_server, owner, wanted, found)
    # every task's events, the one-off's MISSED long settled: its verdict may be appealed until a moment
    read_datetimes(await api.execute(EVENTS, {"task": None}, token=owner), wanted, found)

    assert {
        "Task.upcoming",
        "TaskInstance.dueAt",
        "VerificationEvent.occurredAt",
        "Session.expiresAt",
    } <= wanted
    assert sorted(wanted - found.keys()) == []  # every DateTime field of the schema was read with a value
    bad = {name: values for name, values in found.items() if not all(is_utc_z(v) for v in values)}
    assert bad == {}
    # the zone's wall clock is kept: each occurrence is at the start's local time, given separately as timezone
    local_start = starts.astimezone(ZoneInfo(ZONE)).time()
    upcoming = [datetime.fromisoformat(str(at)).astimezone(ZoneInfo(ZONE)) for at in found["Task.upcoming"]]
    assert upcoming and all(at.time() == local_start for at in upcoming)
    instants = payload_instants(json.loads(body))
    assert len(instants) == 4 and all(is_utc_z(v) for v in instants), instants

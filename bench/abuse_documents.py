"""Hostile documents, bodies, dates and videos against the default settings, on PostgreSQL and on the
embedded default, printing for each attack: the API's CPU seconds, its peak RSS, the slowest /healthz answer while it ran (the event
loop's worst stall), how long another user's ordinary requests took meanwhile (p50 / max), and the answers.

`python -m bench.abuse_documents [--only TEXT]` (1 to 3 minutes) on a private PostgreSQL database and
redis-server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import websockets

from bench.abuse import Figures, measure
from bench.live_env import private_redis
from harness import media_factory
from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    create_open_task,
    file_var,
    free_port,
    migrated_database,
    run_cli,
    upload,
)

MAX_DOCUMENT_BYTES = 16 * 1024  # PROOFLOOP_MAX_DOCUMENT_BYTES' default
SUBSCRIBE_HEAD = "subscription { verificationEvents { ...F0 } }"
# bodies that are no JSON object, or no UTF-8 at all, each sent as application/json
HOSTILE_BODIES = [
    b'"a string"',
    b"42",
    b"null",
    b"true",
    b"[]",
    b'{"query": "{ __typename \xc3}"}',
    b"\xfe\xff\x00{",
]
# instants outside the years 1..9999 once their offset is applied
EXTREME_INSTANTS = [
    "0001-01-01T00:00:00+14:00",
    "0001-01-01T13:59:59+14:00",
    "0001-01-01T00:00:00+00:01",
    "0001-01-01T00:00:00.000001+23:59",
    "9999-12-31T23:59:59-14:00",
    "9999-12-31T10:00:00-14:00",
    "9999-12-31T23:59:59.999999-00:01",
    "9999-12-31T00:01:00-23:59",
]
CREATE_TASK = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"
SUBMIT_VIDEO = "mutation($id: ID!, $v: Upload!) { submitVideo(instanceId: $id, video: $v) { status } }"


def fragment_bomb(head: str = "query { nosuchfield { ...F0 } }", on: str = "User", levels: int = 30) -> str:
    chain = " ".join(f"fragment F{k} on {on} {{ ...F{k + 1} ...F{k + 1} }}" for k in range(levels))
    return f"{head} {chain} fragment F{levels} on {on} {{ id }}"


def heavy_document(n: int) -> str:
    """Aliases up to the size limit (~3,700 tokens): parsed, then refused for its aliases."""
    parts, size = ["{ me {"], 6
    while size + 40 < MAX_DOCUMENT_BYTES:
        parts.append(f"a{n}x{len(parts):05}: id")
        size += len(parts[-1]) + 1
    return " ".join(parts) + " } }"


def padded_valid_document(n: int) -> str:
    head = f"query Padded{n} {{ me {{ id }} }}\n#"
    return head + "x" * (MAX_DOCUMENT_BYTES - len(head))


async def post(client: httpx.AsyncClient, document: str, token: str | None) -> str:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    response = await client.post("/graphql", json={"query": document}, headers=headers)
    return _code(response)


def _code(response: httpx.Response) -> str:
    errors = response.json().get("errors")
    code = str(errors[0]["extensions"]["code"]) if errors else "OK"
    return f"{response.status_code} {code}"


def tally(codes: list[str]) -> str:
    return ", ".join(f"{code} x{count}" for code, count in sorted(Counter(codes).items()))


async def fragment_bombs(server: ServerProcess, api: ApiClient, token: str) -> str:
    """The 2^30 bomb 20 times each over POST and GET (anonymous), and in websocket subscribe frames."""
    bomb = fragment_bomb()
    codes = []
    async with httpx.AsyncClient(base_url=server.url, timeout=300) as client:
        for _ in range(20):
            codes.append("POST " + await post(client, bomb, None))
            response = await client.get(
                "/graphql", params={"query": bomb}, headers={"accept": "application/json"}
            )
            codes.append("GET " + _code(response))
    url = server.url.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=[websockets.Subprotocol("graphql-transport-ws")]) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
        )
        await ws.recv()
        subscription = fragment_bomb(SUBSCRIBE_HEAD, "VerificationEvent")
        for n in range(20):
            payload: dict[str, Any] = {"query": subscription}
            await ws.send(json.dumps({"id": str(n), "type": "subscribe", "payload": payload}))
            frame = json.loads(await ws.recv())
            codes.append(f"WS {frame['type']} {frame['payload'][0]['extensions']['code']}")
    return tally(codes)


async def distinct_documents(server: ServerProcess, api: ApiClient, token: str) -> str:
    """1,000 distinct 16 KiB documents, 4 at a time: odd ones ~3,700 tokens refused, even ones valid."""
    gate = asyncio.Semaphore(4)
    async with httpx.AsyncClient(base_url=server.url, timeout=300) as client:

        async def one(n: int) -> str:
            async with gate:
                return await post(client, heavy_document(n) if n % 2 else padded_valid_document(n), token)

        return tally(await asyncio.gather(*(one(n) for n in range(1000))))


async def unused_fragments(server: ServerProcess, api: ApiClient, token: str) -> str:
    """Ten 1 MiB documents of 33,000 unused fragments (half of them anonymous)."""
    fragments = " ".join(f"fragment U{n:05} on User {{ id }}" for n in range(33_000))
    document = f"{{ me {{ id }} }} {fragments}"
    async with httpx.AsyncClient(base_url=server.url, timeout=300) as client:
        return tally([await post(client, document, token if n % 2 else None) for n in range(10)])


async def duplicate_fields(server: ServerProcess, api: ApiClient, token: str) -> str:
    """Ten documents of 40,000 duplicate fields under tasks(first: 0), then twenty of 1,900 (within size)."""

    def duplicates(n: int) -> str:
        return "{ tasks(first: 0) { edges { node { " + " id" * n + " } } } }"

    async with httpx.AsyncClient(base_url=server.url, timeout=300) as client:
        codes = [await post(client, duplicates(40_000), token) for _ in range(10)]
        codes += [await post(client, duplicates(1900), token) for _ in range(20)]
    return tally(codes)


async def literal_storms(server: ServerProcess, api: ApiClient, token: str) -> str:
    """Errors that echo their input: a 2.2 KB anonymous literal of 325 fields, 8 at a time x 40; a 12 KB
    signed-in one of 1,800 fields x 10; 120 small invalid literals in one list (1,200 errors before the
    bound) x 20; the reply's size is part of the answer."""
    wide = " ".join(f"x{n}:1" for n in range(325))
    anonymous = f"mutation {{ createTask(input: {{{wide}}}) {{ id }} }}"
    wider = " ".join(f"x{n}:1" for n in range(1800))
    signed = f"mutation {{ createTask(input: {{{wider}}}) {{ id }} }}"
    samples = ", ".join("{x0:1 x1:1 x2:1 x3:1 x4:1 x5:1}" for _ in range(120))
    many = f'mutation {{ reportLocations(instanceId: "x", samples: [{samples}]) {{ accepted }} }}'
    largest = 0
    gate = asyncio.Semaphore(8)
    async with httpx.AsyncClient(base_url=server.url, timeout=300) as client:

        async def one(document: str, as_user: str | None) -> str:
            nonlocal largest
            async with gate:
                headers = {"authorization": f"Bearer {as_user}"} if as_user else {}
                response = await client.post("/graphql", json={"query": document}, headers=headers)
            largest = max(largest, len(response.content))
            return _code(response)

        codes = await asyncio.gather(*(one(anonymous, None) for _ in range(40)))
        codes += [await one(signed, token) for _ in range(10)]
        codes += [await one(many, token) for _ in range(20)]
    return f"{tally(list(codes))}; largest reply {largest} bytes"


async def hostile_bodies(server: ServerProcess, api: ApiClient, token: str) -> str:
    """Each body 20 times over one kept-alive connection: the connection must stay usable after each."""
    codes = []
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        for _ in range(20):
            for body in HOSTILE_BODIES:
                response = await client.post(
                    "/graphql", content=body, headers={"content-type": "application/json"}
                )
                codes.append(_code(response))
    return tally(codes)


async def extreme_dates(server: ServerProcess, api: ApiClient, token: str) -> str:
    """createTask with every out-of-range startsAt, 10 rounds."""
    codes = []
    for _ in range(10):
        for instant in EXTREME_INSTANTS:
            task = {
                "title": "edge",
                "method": "PHOTO",
                "schedule": {"startsAt": instant, "timezone": "UTC", "windowSeconds": 60, "graceSeconds": 0},
            }
            try:
                await api.execute(CREATE_TASK, {"input": task}, token=token)
                codes.append("OK")
            except GraphQLFailure as failure:
                codes.append(failure.code)
    return tally(codes)


async def large_frame_videos(server: ServerProcess, api: ApiClient, token: str) -> str:
    """Two 6400x6240 H.264 videos (4 frames, 39.9 MP each) at once, 3 rounds."""
    video = media_factory.large_frame_clip((6400, 6240))
    codes = []
    for _ in range(3):
        instances = [(await create_open_task(api, token, "VIDEO"))[1] for _ in range(2)]

        async def one(instance_id: str) -> str:
            try:
                await upload(
                    api, SUBMIT_VIDEO, {"id": instance_id, "v": file_var(video, "big.mp4")}, token=token
                )
                return "accepted"
            except GraphQLFailure as failure:
                return failure.code

        codes += await asyncio.gather(*(one(i) for i in instances))
    return tally(codes)


Attack = Callable[[ServerProcess, ApiClient, str], Awaitable[str]]
ATTACKS: list[tuple[str, Attack]] = [
    ("fragment bomb, 2^30 expansions: 20 POST + 20 GET + 20 websocket frames", fragment_bombs),
    ("1,000 distinct 16 KiB documents", distinct_documents),
    ("1 MiB of 33,000 unused fragments x 10", unused_fragments),
    ("duplicate fields under tasks(first: 0): 40,000 x 10, 1,900 x 20", duplicate_fields),
    (
        "literal storms: 325 fields anonymous x 40, 1,800 signed in x 10, 120 invalid samples x 20",
        literal_storms,
    ),
    ("bodies that are no JSON object or no UTF-8: 7 kinds x 20, one connection", hostile_bodies),
    ("createTask with 8 out-of-range startsAt x 10", extreme_dates),
    ("two 40 MP videos at once x 3", large_frame_videos),
]


async def run_attack(server: ServerProcess, attack: Attack) -> Figures:
    api = ApiClient(server.url)

    async def prepare() -> str:
        token, _ = await api.register()
        return token

    return await measure(server, attack, prepare)


def report(deployment: str, figures: list[tuple[str, Figures]]) -> None:
    print(f"\n{deployment}")
    print(f"  {'CPU s':>7} {'RSS MB':>7} {'healthz max ms':>15} {'others p50/max ms':>18}  attack: answers")
    for name, f in figures:
        print(
            f"  {f.cpu_seconds:7.2f} {f.rss_peak_mb:7.0f} {f.healthz_max_ms:15.0f}"
            f" {f.other_p50_ms:8.0f} / {f.other_max_ms:<7.0f}  {name}: {f.outcome}"
        )


def run_all(server: ServerProcess, deployment: str, only: str | None = None) -> None:
    chosen = [(name, attack) for name, attack in ATTACKS if only is None or only in name]
    report(deployment, [(name, asyncio.run(run_attack(server, attack))) for name, attack in chosen])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", help="run the attacks whose name holds this text (e.g. 'literal')")
    only = parser.parse_args().only
    with migrated_database("proofloop_abuse_documents") as database_url, private_redis() as redis_port:
        env = {
            "PROOFLOOP_DATABASE_URL": database_url,
            "PROOFLOOP_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "PROOFLOOP_DATA_DIR": tempfile.mkdtemp(prefix="proofloop-abuse-documents-"),
            "PROOFLOOP_SECRET_KEY": "bench",
        }
        with ServerProcess(env, port=free_port()) as server:
            run_all(server, "PostgreSQL + Redis, default settings", only)
    embedded = {"PROOFLOOP_DATA_DIR": tempfile.mkdtemp(prefix="proofloop-abuse-embedded-")}
    embedded["PROOFLOOP_SECRET_KEY"] = "bench"
    run_cli(["migrate"], embedded)
    with ServerProcess(embedded, port=free_port()) as server:
        run_all(server, "embedded default (SQLite + embedded Redis), default settings", only)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A login flood against one API process: how long other users' requests take meanwhile.

Two configurations in the same run: argon2 on 16 threads (effectively unbounded: every core hashes) and on
PROOFLOOP_PASSWORD_HASH_THREADS=1 (the default). For each: the latency of an authenticated `me` query
alone, then while 10 clients send wrong passwords as fast as they can (distinct emails and addresses, so
no login limit steps in), plus the logins per second and how many were refused by the hashing queue.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
import uuid

import httpx

from bench.live_env import private_redis
from harness.proofloop import ServerProcess, free_port, migrated_database

FLOOD_CLIENTS = 10
FLOOD_SECONDS = 6.0
LOGIN = "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { token } }"


async def me_latencies(http: httpx.AsyncClient, token: str, until: float) -> list[float]:
    latencies = []
    while time.monotonic() < until:
        started = time.perf_counter()
        response = await http.post(
            "/graphql", json={"query": "{ me { id } }"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert "errors" not in response.json(), response.text
        latencies.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(0.05)
    return latencies


async def flood(http: httpx.AsyncClient, client_no: int, until: float, counts: dict[str, int]) -> None:
    i = 0
    while time.monotonic() < until:
        i += 1
        response = await http.post(
            "/graphql",
            json={
                "query": LOGIN,
                "variables": {"e": f"flood-{client_no}-{i}@example.com", "p": "a wrong guess!"},
            },
            headers={"X-Forwarded-For": f"10.9.{client_no}.{i % 250}"},
        )
        code = response.json()["errors"][0]["extensions"]["code"]
        counts[code] = counts.get(code, 0) + 1


def summary(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p95 = ordered[int(len(ordered) * 0.95) - 1] if len(ordered) >= 20 else ordered[-1]
    return f"p50 {statistics.median(ordered):6.1f} ms  p95 {p95:6.1f} ms  max {ordered[-1]:6.1f} ms  (n={len(ordered)})"


async def measure(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        email = f"bench-{uuid.uuid4().hex[:8]}@example.com"
        registered = await http.post(
            "/graphql",
            json={
                "query": 'mutation($e: String!) { register(email: $e, password: "a long bench passphrase", displayName: "B") { token } }',
                "variables": {"e": email},
            },
        )
        token = registered.json()["data"]["register"]["token"]
        alone = await me_latencies(http, token, time.monotonic() + 3)
        counts: dict[str, int] = {}
        until = time.monotonic() + FLOOD_SECONDS
        during, *_ = await asyncio.gather(
            me_latencies(http, token, until), *(flood(http, n, until, counts) for n in range(FLOOD_CLIENTS))
        )
        assert during is not None
        print(f"  me alone:          {summary(alone)}")
        print(f"  me during flood:   {summary(during)}")
        logins = sum(counts.values())
        print(
            f"  flood: {logins / FLOOD_SECONDS:.1f} logins/s answered; codes {dict(sorted(counts.items()))}"
        )


def main() -> None:
    with (
        migrated_database("proofloop_bench") as database_url,
        private_redis() as redis_port,
        tempfile.TemporaryDirectory() as data_dir,
    ):
        for threads, queue in ((16, 1000), (1, 32)):
            env = {
                "PROOFLOOP_DATABASE_URL": database_url,
                "PROOFLOOP_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
                "PROOFLOOP_DATA_DIR": data_dir,
                "PROOFLOOP_SECRET_KEY": "bench",
                "PROOFLOOP_TRUSTED_PROXIES": "127.0.0.1",
                "PROOFLOOP_PASSWORD_HASH_THREADS": str(threads),
                "PROOFLOOP_PASSWORD_HASH_QUEUE": str(queue),
                "PROOFLOOP_LOG_LEVEL": "WARNING",
            }
            print(
                f"argon2 on {threads} thread(s), queue {queue}; {FLOOD_CLIENTS}-way login flood for {FLOOD_SECONDS:.0f} s"
            )
            with ServerProcess(env, port=free_port()) as server:
                asyncio.run(measure(server.url))


if __name__ == "__main__":
    main()

"""The long fuzz run: hypothesis-graphql documents for every query and mutation against a live API.

`python -m bench.fuzz_api [EXAMPLES]` (default 800, about 3 minutes) on a private PostgreSQL database and redis-server;
prints how many requests were sent, the error codes seen and the slowest response. Fails (non-zero exit)
on any HTTP 5xx, INTERNAL_SERVER_ERROR or a response slower than harness.api_fuzz.RESPONSE_TIMEOUT.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile

from bench.live_env import private_redis
from harness.api_fuzz import fuzz_api
from harness.proofloop import (
    ApiClient,
    ServerProcess,
    create_open_task,
    free_port,
    migrated_database,
    partner_pair,
)


async def seed(url: str) -> tuple[str, list[str]]:
    api = ApiClient(url)
    owner_token, owner_id, _, partner_id = await partner_pair(api)
    known = [owner_id, partner_id]
    for method in ("GPS", "PHOTO", "PARTNER", "VIDEO"):
        known += list(await create_open_task(api, owner_token, method))
    partnerships = await api.execute("{ partnerships { id } }", token=owner_token)
    return owner_token, known + [p["id"] for p in partnerships["partnerships"]]


def main(examples: int) -> int:
    with migrated_database("proofloop_fuzz") as database_url, private_redis() as redis_port:
        env = {
            "PROOFLOOP_DATABASE_URL": database_url,
            "PROOFLOOP_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "PROOFLOOP_DATA_DIR": tempfile.mkdtemp(prefix="proofloop-fuzz-"),
            "PROOFLOOP_SECRET_KEY": "bench",
        }
        with ServerProcess(env, port=free_port()) as server:
            token, known = asyncio.run(seed(server.url))
            report = fuzz_api(server.url, token, known, examples=examples)
    print(f"requests: {report.requests}")
    print("codes:", ", ".join(f"{code} {count}" for code, count in sorted(report.codes.items())))
    print(f"slowest response: {report.slowest_seconds * 1000:.0f} ms for\n{report.slowest_document}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 800))

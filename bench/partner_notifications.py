"""Partners told by webhook of a herd: 1,000 owners each miss a task at one instant, and each owner's partner
has a webhook for MISSED; how late the settlements are beside the same herd without webhooks, and how long
after each settlement its partner's receiver has the notice, beside the same 1,000 POSTs sent straight
from this process (aiohttp, 16 at a time, as the worker's own bound).

Rows inserted by SQL (users, ACTIVE partnerships, webhooks, one-off tasks with their PENDING instance due at
one whole second, no link: the pump hands them over). One worker (1 process x 8 threads) on PostgreSQL,
webhook concurrency 16 and 2 per owner (the defaults); the receiver answers 204 at once, in this process.
Settlement lateness = settled_at - due; notice lag = the receiver's arrival - settled_at.

Run: .venv/bin/python -m bench.partner_notifications (BENCH_WEBHOOK_PER_HOST=16 for a gateway's setting)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import asyncpg

from bench.chain_support import (
    BenchEnv,
    Lateness,
    Row,
    bench_user,
    bulk_pending,
    db_now,
    print_table,
    run_main,
    say,
    whole_second,
)

OWNERS = 1_000
# the worker's bound per destination host (PROOFLOOP_WEBHOOK_CONCURRENCY_PER_HOST; its default is 4): every
# notice here goes to one receiver, as to a shared push gateway
PER_HOST = os.environ.get("BENCH_WEBHOOK_PER_HOST", "4")
LEAD_S = 25  # the rows are due this far ahead: the setup is done and the pump hands them over
RAW_CONCURRENCY = 16  # PROOFLOOP_WEBHOOK_CONCURRENCY's default


class Receiver:
    """Answers 204 at once; records when each instance's notice arrived (wall clock, epoch seconds)."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/hook"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                body = json.loads(await reader.readexactly(length))
                key = body.get("instance", {}).get("id") or body.get("deliveryId")
                self.arrived.setdefault(str(key), time.time())
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, StopIteration):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


async def _partnered_owners(db: asyncpg.Connection, url: str | None) -> list[str]:
    owners = []
    for _ in range(OWNERS):
        owner, partner = await bench_user(db), await bench_user(db)
        await db.execute(
            "INSERT INTO partnerships (id, user_id, partner_id, invited_email, status, created_at, responded_at)"
            " VALUES ($1, $2, $3, 'partner@example.com', 'ACTIVE', now(), now())",
            uuid.uuid4(),
            owner,
            partner,
        )
        if url is not None:
            await db.execute(
                "INSERT INTO webhooks (id, owner_id, url, secret, event_types, created_at)"
                " VALUES ($1, $2, $3, $4, 'MISSED', now())",
                uuid.uuid4(),
                partner,
                url,
                "s" * 32,
            )
        owners.append(owner)
    return owners


async def _phase(
    db: asyncpg.Connection, name: str, receiver: Receiver | None
) -> tuple[Lateness, Lateness, int]:
    url = await receiver.start() if receiver is not None else None
    owners = await _partnered_owners(db, url)
    due = whole_second(await db_now(db) + timedelta(seconds=LEAD_S))
    for owner in owners:
        await bulk_pending(db, owner, name, 1, due)
    say(f"{name}: {OWNERS} instances due {due:%H:%M:%S}")
    until = time.monotonic() + LEAD_S + 120
    rows: list[asyncpg.Record] = []
    while time.monotonic() < until:
        rows = await db.fetch(
            "SELECT i.id, i.settled_at FROM task_instances i JOIN tasks t ON t.id = i.task_id"
            " WHERE t.title LIKE $1",
            f"{name}-%",
        )
        settled = [r for r in rows if r["settled_at"] is not None]
        all_told = receiver is None or len(receiver.arrived) >= OWNERS
        if len(settled) == OWNERS and all_told:
            break
        await asyncio.sleep(0.5)
    settled_at = {str(r["id"]): r["settled_at"] for r in rows if r["settled_at"] is not None}
    lateness = Lateness.of([(at - due).total_seconds() * 1000 for at in settled_at.values()])
    lag = Lateness.of([])
    told = 0
    if receiver is not None:
        from services.kit import global_id

        lags = []
        for instance_id, at in settled_at.items():
            arrived = receiver.arrived.get(global_id("TaskInstance", instance_id))
            if arrived is not None:
                lags.append((arrived - at.timestamp()) * 1000)
        lag, told = Lateness.of(lags), len(lags)
        receiver.close()
        # every delivery in the database is this phase's (the quiet one had no webhooks)
        rows = await db.fetch(
            "SELECT EXTRACT(EPOCH FROM (created_at - $1)) * 1000 AS fanned,"
            " EXTRACT(EPOCH FROM (finished_at - created_at)) * 1000 AS sent, attempts, put_offs"
            " FROM webhook_deliveries",
            due,
        )
        say(
            f"{name}: fan-out (row written - due) {Lateness.of([float(r['fanned']) for r in rows]).text()};"
            f" sending (finished - written) {Lateness.of([float(r['sent'] or 0) for r in rows]).text()};"
            f" attempts > 1: {sum(1 for r in rows if r['attempts'] > 1)}; put-offs: {sum(r['put_offs'] for r in rows)}"
        )
    return lateness, lag, told


async def _raw_posts(receiver: Receiver) -> float:
    """The same number of POSTs straight from here, 16 at a time: seconds until the last answer."""
    url = await receiver.start()
    gate = asyncio.Semaphore(RAW_CONCURRENCY)
    started = time.monotonic()
    async with aiohttp.ClientSession() as session:

        async def post(n: int) -> None:
            async with gate, session.post(url, json={"deliveryId": f"raw-{n}"}) as answer:
                await answer.read()

        await asyncio.gather(*(post(n) for n in range(OWNERS)))
    receiver.close()
    return time.monotonic() - started


async def scenario(env: BenchEnv) -> None:
    worker = env.proofloop_worker(
        {"PROOFLOOP_WEBHOOK_ALLOW_INSECURE": "true", "PROOFLOOP_WEBHOOK_CONCURRENCY_PER_HOST": PER_HOST}
    )
    db = await asyncpg.connect(env.database_url)
    try:
        quiet, _, _ = await _phase(db, "quiet", None)
        notified, lag, told = await _phase(db, "notified", Receiver())
        raw_s = await _raw_posts(Receiver())
    finally:
        await db.close()
        worker.stop()
    print_table(
        f"partner_notifications: {OWNERS} MISSED at one instant, each partner's webhook told, {PER_HOST} per"
        f" host ({datetime.now(UTC):%Y-%m-%d})",
        [
            Row("settlement lateness, no webhooks", quiet.text(), "-", "-", None),
            Row("settlement lateness, every partner with a webhook", notified.text(), "-", "no worse", None),
            Row("partners told", f"{told}/{OWNERS}", "-", f"{OWNERS}", told == OWNERS),
            Row(
                "notice lag after settlement", lag.text(), f"{OWNERS} direct POSTs: {raw_s:.2f} s", "-", None
            ),
        ],
    )


def main() -> None:
    run_main("partner_notifications", scenario, time_limit=300)


if __name__ == "__main__":
    main()

"""Notification starvation: how late a bystander's notices leave while many accounts' deliveries go to slow
receivers on many host names, beside the same bystander alone.

The crowd: 20 accounts, each with 5 webhooks on host names of their own (127.0.0.2 .. 127.0.0.101, a
wildcard DNS name's worth), each receiver answering `HTTP/1.1 200 OK` and then one header byte every 2 s,
never finishing; 20 deliveries owed per webhook (2,000). The bystander: one account whose webhook answers
at once, owed one delivery every 2 s for 30 s, starting 5 s after the crowd's. Rows are written by SQL,
owed now, with no link: the pump hands them to one worker (1 process x 8 threads, the default bounds: 16
attempts in flight, 2 per owner, 4 per host). Lag = the bystander's receiver's arrival - the row's due time.

Run: .venv/bin/python -m bench.notification_starvation
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from bench.chain_support import BenchEnv, Lateness, Row, bench_user, db_now, print_table, run_main, say

CROWD = 20
HOSTS_EACH = 5
OWED_EACH = 20  # per crowd webhook
BYSTANDER_NOTICES = 15
BYSTANDER_EVERY_S = 2.0
BYSTANDER_AFTER_S = 5.0
TRICKLE_S = 2.0


async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A slow receiver: the status line at once, then a header byte every 2 s, never the end."""
    with contextlib.suppress(ConnectionError, asyncio.CancelledError):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\n")
        while True:
            await writer.drain()
            await asyncio.sleep(TRICKLE_S)
            writer.write(b"X")
    writer.close()


class Bystander:
    """Answers 204 at once; records when each delivery arrived (epoch seconds)."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.news = asyncio.Event()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                body = json.loads(await reader.readexactly(length))
                self.arrived.setdefault(str(body["deliveryId"]), time.time())
                self.news.set()
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                await writer.drain()
        writer.close()


async def webhook(db: asyncpg.Connection, owner: str, url: str) -> str:
    hook_id = str(uuid.uuid4())
    await db.execute(
        "INSERT INTO webhooks (id, owner_id, url, secret, event_types, created_at)"
        " VALUES ($1, $2, $3, $4, 'DUE_SOON', now())",
        hook_id,
        owner,
        url,
        "s" * 32,
    )
    return hook_id


async def owe(db: asyncpg.Connection, hook_id: str, count: int, due: datetime) -> list[str]:
    """`count` PING deliveries owed at `due`, with no link: the pump's to hand over."""
    ids = [str(uuid.uuid4()) for _ in range(count)]
    await db.executemany(
        "INSERT INTO webhook_deliveries (id, webhook_id, body, kind, status, attempts, put_offs, created_at,"
        " fire_at, link_no) VALUES ($1, $2, $3, 'PING', 'PENDING', 0, 0, now(), $4, 0)",
        [(i, hook_id, json.dumps({"type": "PING", "deliveryId": i}), due) for i in ids],
    )
    return ids


async def phase(db: asyncpg.Connection, name: str, crowded: bool) -> tuple[Lateness, int]:
    servers: list[asyncio.Server] = []
    bystander = Bystander()
    fast = await asyncio.start_server(bystander.handle, "127.0.0.1", 0)
    servers.append(fast)
    if crowded:
        for n in range(CROWD):
            owner = await bench_user(db)
            for h in range(HOSTS_EACH):
                host = f"127.0.{(n * HOSTS_EACH + h) // 250}.{(n * HOSTS_EACH + h) % 250 + 2}"
                slow = await asyncio.start_server(trickle, host, 0)
                servers.append(slow)
                url = f"http://{host}:{slow.sockets[0].getsockname()[1]}/hook"
                await owe(db, await webhook(db, owner, url), OWED_EACH, await db_now(db))
        say(
            f"{name}: {CROWD * HOSTS_EACH * OWED_EACH} deliveries owed to {CROWD * HOSTS_EACH} slow receivers"
        )
    port = fast.sockets[0].getsockname()[1]
    hook = await webhook(db, await bench_user(db), f"http://127.0.0.1:{port}/hook")
    await asyncio.sleep(BYSTANDER_AFTER_S if crowded else 0)
    due: dict[str, float] = {}
    for _ in range(BYSTANDER_NOTICES):
        at = await db_now(db)
        [delivery] = await owe(db, hook, 1, at)
        due[delivery] = at.timestamp()
        await asyncio.sleep(BYSTANDER_EVERY_S)

    async def all_told() -> None:
        while len(bystander.arrived) < len(due):
            bystander.news.clear()
            await bystander.news.wait()

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(all_told(), 120)
    lags = [(bystander.arrived[d] - at) * 1000 for d, at in due.items() if d in bystander.arrived]
    for server in servers:
        server.close()
    await db.execute("DELETE FROM webhooks")  # the next phase starts with nothing owed
    return Lateness.of(lags), len(lags)


async def scenario(env: BenchEnv) -> None:
    worker = env.proofloop_worker({"PROOFLOOP_WEBHOOK_ALLOW_INSECURE": "true"})
    db = await asyncpg.connect(env.database_url)
    try:
        quiet, quiet_told = await phase(db, "alone", crowded=False)
        crowded, crowded_told = await phase(db, "crowded", crowded=True)
    finally:
        await db.close()
        worker.stop()
    print_table(
        f"notification_starvation: a bystander's {BYSTANDER_NOTICES} notices beside {CROWD} accounts x"
        f" {HOSTS_EACH} slow hosts x {OWED_EACH} owed ({datetime.now(UTC):%Y-%m-%d})",
        [
            Row(
                "bystander alone: lag after due",
                quiet.text(),
                f"{quiet_told}/{BYSTANDER_NOTICES} told",
                "-",
                None,
            ),
            Row(
                "bystander in the crowd: lag after due",
                crowded.text(),
                f"{crowded_told}/{BYSTANDER_NOTICES} told",
                "within seconds",
                crowded_told == BYSTANDER_NOTICES and crowded.max < 10_000,
            ),
        ],
    )


def main() -> None:
    run_main("notification_starvation", scenario, time_limit=420)


if __name__ == "__main__":
    main()

"""Webhook starvation: how late a bystander's instances settle while two accounts' reminders go to 10
webhooks that answer `HTTP/1.1 200 OK` and then trickle one header byte every 2 s, beside the same run
without webhooks.

Each phase: two attacker accounts with a task every 4 s carrying two reminders (at open, 1 s before due),
and a bystander with 20 one-off PHOTO tasks (no proof: MISSED at their deadline, no grace) due one every
2 s from 10 s on. The second phase adds 5 webhooks per attacker, each to its own trickling receiver in this
process. One worker (1 process x 8 threads) on PostgreSQL; lateness = settled_at - closes_at, read from the
database.

Run: .venv/bin/python -m bench.webhook_starvation
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from bench.chain_support import (
    BenchEnv,
    Lateness,
    Row,
    bench_user,
    close_orm,
    open_orm,
    print_table,
    run_main,
    say,
)

ATTACKERS = 2
WEBHOOKS_EACH = 5
BYSTANDER_TASKS = 20
FIRST_DUE_S = 10
EVERY_S = 2
ATTACK_EVERY_S = 4
TRICKLE_S = 2.0

_LATENESS_SQL = """
SELECT COUNT(*) AS total, COUNT(i.settled_at) AS settled,
       array_remove(array_agg(EXTRACT(EPOCH FROM (i.settled_at - i.closes_at)) * 1000), NULL) AS late_ms
FROM task_instances i JOIN tasks t ON t.id = i.task_id WHERE t.title LIKE $1
"""


class Trickler:
    """An HTTP receiver that answers `200 OK` and then one header byte every 2 s, forever."""

    def __init__(self) -> None:
        self.requests = 0
        self.server: asyncio.Server | None = None
        self.writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/hook"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.add(writer)
        with contextlib.suppress(Exception):
            await reader.readuntil(b"\r\n\r\n")
            self.requests += 1
            writer.write(b"HTTP/1.1 200 OK\r\n")
            while True:
                try:
                    if not await asyncio.wait_for(reader.read(4096), TRICKLE_S):
                        break  # the client gave up
                except TimeoutError:
                    writer.write(b"X")
                    await writer.drain()
        self.writers.discard(writer)
        writer.close()

    def close(self) -> None:
        """Stop listening and hang up: each handler then reads its end and returns."""
        if self.server is not None:
            self.server.close()
        for writer in list(self.writers):
            writer.close()


async def _create(owner_id: str, title: str, starts_at: datetime, rrule: str | None, reminders: bool) -> None:
    from models import ReminderAnchor, User, VerificationMethod
    from rules.recurrence import Schedule
    from services.chain.chain import ChainTiming
    from services.reminders.reminders import ReminderOffset
    from services.tasks.drafts import TaskDraft
    from services.tasks.tasks import create_task_planned

    offsets = (ReminderOffset(ReminderAnchor.OPENS, 0), ReminderOffset(ReminderAnchor.DUE, 1))
    draft = TaskDraft(
        title=title,
        description=None,
        method=VerificationMethod.PHOTO,
        schedule=Schedule(
            starts_at=starts_at, rrule=rrule, timezone="UTC", window_seconds=2, grace_seconds=0
        ),
        reminders=offsets if reminders else (),
    )
    owner = await User.get(id=owner_id)
    await create_task_planned(
        owner, draft, min_interval_seconds=1, timing=ChainTiming(300), max_tasks=1_000_000
    )


async def _phase(db: asyncpg.Connection, name: str, webhooks: bool) -> tuple[Lateness, int, int, int]:
    from models import Webhook

    tricklers: list[Trickler] = []
    attack_count = (FIRST_DUE_S + BYSTANDER_TASKS * EVERY_S) // ATTACK_EVERY_S + 2
    try:
        for a in range(ATTACKERS):
            attacker = await bench_user(db)
            if webhooks:
                for _ in range(WEBHOOKS_EACH):
                    trickler = Trickler()
                    tricklers.append(trickler)
                    await Webhook.create(owner_id=attacker, url=await trickler.start(), secret="s" * 32)
            starts = (datetime.now(UTC) + timedelta(seconds=3)).replace(microsecond=0)
            rule = f"FREQ=SECONDLY;INTERVAL={ATTACK_EVERY_S};COUNT={attack_count}"
            await _create(attacker, f"{name}-attack-{a}", starts, rule, reminders=True)
        bystander = await bench_user(db)
        first_due = (datetime.now(UTC) + timedelta(seconds=FIRST_DUE_S)).replace(microsecond=0)
        for n in range(BYSTANDER_TASKS):
            due = first_due + timedelta(seconds=EVERY_S * n)
            await _create(bystander, f"{name}-bystander-{n}", due, None, reminders=False)
        until = time.monotonic() + FIRST_DUE_S + BYSTANDER_TASKS * EVERY_S + 150
        while True:
            row = await db.fetchrow(_LATENESS_SQL, f"{name}-bystander-%")
            assert row is not None
            if row["settled"] >= row["total"] or time.monotonic() > until:
                break
            await asyncio.sleep(0.5)
        attempts = sum(t.requests for t in tricklers)
        return Lateness.of(list(row["late_ms"] or [])), int(row["settled"]), int(row["total"]), attempts
    finally:
        for trickler in tricklers:
            trickler.close()
        await asyncio.sleep(0.5)  # the handlers see their connections end


async def scenario(env: BenchEnv) -> None:
    worker = env.proofloop_worker({"PROOFLOOP_WEBHOOK_ALLOW_INSECURE": "true"})
    db = await asyncpg.connect(env.database_url)
    await open_orm(env)
    rows: list[Row] = []
    try:
        for name, webhooks in (("quiet", False), ("trickling", True)):
            say(
                f"{name}: {BYSTANDER_TASKS} bystander deadlines, attackers with {'10' if webhooks else 'no'} webhooks"
            )
            late, settled, total, attempts = await _phase(db, name, webhooks)
            label = "with 10 trickling webhooks" if webhooks else "without webhooks"
            rows += [
                Row(f"{label}: settled", f"{settled}/{total}", "-", "-", None),
                Row(f"{label}: lateness p50 / p99 / max", late.text(), "-", "-", None),
                Row(f"{label}: attempts the receivers saw", str(attempts), "-", "-", None),
            ]
    finally:
        await close_orm()
        await db.close()
        worker.stop()
    print_table("webhook_starvation: bystander lateness = settled_at - closes_at", rows)


def main() -> None:
    run_main("webhook_starvation", scenario, time_limit=420)


if __name__ == "__main__":
    main()

"""Scale-out: bursts settled by 1 and 2 worker processes, beside raw Dramatiq, in one run.

Each Proofloop burst inserts N one-off tasks and their PENDING instances by SQL, all due at one instant
~20 s ahead (as chain_burst does), so the pump hands their links over (batched: links due at the same
instant share a message); `proofloop worker --processes P --threads 8` settles them MISSED. Figures: time
from the due instant until all settled, settlements/s (settled / that time), lateness p50/p99, links sent
per instance, and instances settled twice (must be 0). Raw Dramatiq: 5,000 no-op messages due at one
instant, with 1 and with 2 processes, same Redis, same worker settings.

For 20,000 at one instant the outstanding-link budget (PROOFLOOP_MAX_OUTSTANDING_LINKS, 5,000 by default,
sized for one process's prefetch of 8,000 messages) is raised to 20,000: the pump's links travel 200 to a
message (LINK_BATCH), so 20,000 links are 100 messages, well inside two processes' prefetch.

Targets: 5,000 within 1.0 s on one process and >= 4x raw; 20,000 with 2 processes within 4 s.
The machine has 2 cores shared with PostgreSQL, Redis and everything else: a second process can only help
as far as a core is idle.

Run: .venv/bin/python -m bench.chain_scale [--count 5000] [--big 20000] [--quick: no --big burst]

On a busy machine the rates follow the load; the CPU per settlement (workers, the database's
backends, Redis) much less: it is printed with the rate the machine's cores would allow at that cost.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg
import psutil

from bench.chain_support import (
    BenchEnv,
    Lateness,
    RawSender,
    Row,
    batch_state,
    bench_user,
    bulk_pending,
    db_now,
    print_table,
    run_main,
    say,
    wait_batch_linked,
    wait_due_settled,
    wait_raw_async,
    whole_second,
)

LEAD_S = 20  # fire_at this far out: the pump's ticks link every row well before it
RAW_LEAD_S = 12
WAIT_S = 90
CPU_WINDOW_LEAD_S = 0.2  # CPU is sampled from this long before the due instant
RAW_COUNT = 5000
CORES = os.cpu_count() or 1


def cpu_seconds(
    root_pid: int, database: str | None = None, redis_port: int | None = None
) -> dict[str, float]:
    """CPU seconds so far of a process tree (the workers), the PostgreSQL backends of the bench's database
    and the private redis-server: what a settlement costs whatever else the shared machine runs."""
    spent = {"workers": 0.0, "postgres": 0.0, "redis": 0.0}
    try:
        root = psutil.Process(root_pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        tree = []
    for proc in tree:
        try:
            times = proc.cpu_times()
            spent["workers"] += times.user + times.system
        except psutil.Error:
            continue
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or ())
        role = None
        if database and cmdline.startswith("postgres:") and f" {database} " in cmdline:
            role = "postgres"
        elif redis_port and "redis-server" in cmdline and f":{redis_port}" in cmdline:
            role = "redis"
        if role is not None:
            try:
                times = proc.cpu_times()
                spent[role] += times.user + times.system
            except psutil.Error:
                continue
    return spent


@dataclass(frozen=True)
class Burst:
    label: str
    processes: int
    n: int
    settled: int
    late: Lateness
    links_sent: int = 0
    twice: int = 0
    cpu: dict[str, float] = field(default_factory=dict)  # seconds over the drain, by role

    def cpu_ms(self, role: str) -> float:
        return self.cpu.get(role, 0.0) / self.settled * 1000 if self.settled else float("nan")

    @property
    def cpu_text(self) -> str:
        parts = [f"{role} {self.cpu_ms(role):.2f}" for role in ("workers", "postgres", "redis")]
        total = sum(self.cpu_ms(role) for role in ("workers", "postgres", "redis"))
        allow = f"{CORES * 1000 / total:,.0f}/s" if total > 0 else "n/a"
        return f"{' + '.join(parts)} ms = {total:.2f} ms ({allow} on {CORES} cores)"

    @property
    def span_s(self) -> float:
        return self.late.max / 1000

    @property
    def per_s(self) -> float:
        return self.settled / self.span_s if self.settled and self.span_s > 0 else float("nan")


async def proofloop_burst(env: BenchEnv, count: int, processes: int) -> Burst:
    batch = f"scale{count}p{processes}"
    extra = {"PROOFLOOP_MAX_OUTSTANDING_LINKS": str(max(5000, count))}
    worker = env.proofloop_worker(extra, processes=processes)
    db = await asyncpg.connect(env.database_url)
    try:
        owner = await bench_user(db)
        fire_at = whole_second(await db_now(db) + timedelta(seconds=LEAD_S))
        await bulk_pending(db, owner, batch, count, fire_at)
        say(f"{batch}: {count} PENDING rows due {fire_at:%H:%M:%S}, {processes} worker process(es)")
        await wait_batch_linked(db, batch, count, timeout=LEAD_S - 2)
        port = int(env.redis_url.rsplit(":", 1)[1].split("/")[0])
        database = env.database_url.rsplit("/", 1)[1]
        # the CPU window opens just before the due instant: the drain's cost, not the pump's ticks before
        remaining = (fire_at - await db_now(db)).total_seconds()
        await asyncio.sleep(max(0.0, remaining - CPU_WINDOW_LEAD_S))
        before = cpu_seconds(worker.pid, database, port)
        await wait_due_settled(db, fire_at, time.monotonic() + CPU_WINDOW_LEAD_S + WAIT_S)
        after = cpu_seconds(worker.pid, database, port)
        state = await batch_state(db, batch, with_events=True)
        say(f"{batch}: {state.settled}/{state.total} settled, last {state.last_ms:.0f} ms after due")
        return Burst(
            f"{count:,} due at one instant",
            processes,
            count,
            state.settled,
            Lateness.of(state.late_ms),
            state.links_sent,
            state.twice,
            {role: after[role] - before[role] for role in after},
        )
    finally:
        await db.close()
        worker.stop()


async def raw_burst(env: BenchEnv, processes: int) -> Burst:
    worker = env.raw_worker(processes=processes)
    sender = RawSender(env.redis_url)
    prefix = f"raw{processes}-"
    try:
        due = time.time() + RAW_LEAD_S
        sender.send_many([(f"{prefix}{i}", due) for i in range(RAW_COUNT)])
        say(f"raw, {processes} process(es): {RAW_COUNT} sent, due in {due - time.time():.1f} s")
        port = int(env.redis_url.rsplit(":", 1)[1].split("/")[0])
        await asyncio.sleep(max(0.0, due - time.time() - 1))
        before = cpu_seconds(worker.pid, None, port)
        runs = await wait_raw_async(env, prefix, RAW_COUNT, time.monotonic() + (due - time.time()) + WAIT_S)
        after = cpu_seconds(worker.pid, None, port)
        return Burst(
            f"raw Dramatiq, {RAW_COUNT:,} no-op",
            processes,
            RAW_COUNT,
            len(runs),
            Lateness.of([r.late_ms for r in runs]),
            cpu={role: after[role] - before[role] for role in after},
        )
    finally:
        sender.close()
        worker.stop()


def rows(bursts: list[Burst], raw: dict[int, Burst]) -> list[Row]:
    table: list[Row] = []
    for burst in bursts:
        base = raw[min(burst.processes, max(raw))]
        ratio = burst.per_s / base.per_s
        within = 1.0 if burst.n <= 5000 and burst.processes == 1 else 4.0
        table.append(
            Row(
                f"{burst.label}, {burst.processes} process(es): all settled after",
                f"{burst.span_s:.2f} s ({burst.settled:,}/{burst.n:,}; settled twice: {burst.twice})",
                f"{base.span_s:.2f} s ({base.processes} process(es))",
                f"<= {within:.0f} s" if burst.n > 5000 or burst.processes == 1 else "-",
                (burst.settled == burst.n and burst.span_s <= within and burst.twice == 0)
                if burst.n > 5000 or burst.processes == 1
                else None,
            )
        )
        table.append(
            Row(
                "  settlements/s (raw: msgs/s); lateness p50 / p99; links per instance",
                f"{burst.per_s:,.0f}/s = {ratio:.2f}x raw; {burst.late.p50:.0f} / {burst.late.p99:.0f} ms; "
                f"{burst.links_sent / burst.n:.2f}",
                f"{base.per_s:,.0f}/s; {base.late.p50:.0f} / {base.late.p99:.0f} ms",
                ">= 4x raw" if burst.processes == 1 else "-",
                ratio >= 4 if burst.processes == 1 else None,
            )
        )
        table.append(Row("  CPU per settlement (raw: per message)", burst.cpu_text, base.cpu_text, "-", None))
    return table


async def scenario(env: BenchEnv, args: argparse.Namespace) -> None:
    raw = {p: await raw_burst(env, p) for p in (1, 2)}
    plan = [(args.count, 1), (args.count, 2)] + ([] if args.quick else [(args.big, 2)])
    bursts = [await proofloop_burst(env, count, processes) for count, processes in plan]
    print_table("chain_scale: bursts on 1 vs 2 worker processes (8 threads each)", rows(bursts, raw))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="the first burst on 1 and 2 processes only")
    parser.add_argument("--count", type=int, default=5000, help="the burst on 1 and on 2 processes")
    parser.add_argument("--big", type=int, default=20000, help="the burst on 2 processes")
    args = parser.parse_args()

    async def run(env: BenchEnv) -> None:
        await scenario(env, args)

    run_main("chain_scale", run, time_limit=470 if not args.quick else 320)


if __name__ == "__main__":
    main()

"""Chaos, long form: each fault injected into a burst of tasks made through the API, beside the
same burst without faults, each in a fresh environment (a database of its own on a private PostgreSQL
cluster, a private redis-server, a real API and worker).

Every task of the burst falls due at the same instants, every EVERY seconds; the fault comes 0.5 s into
the third burst (a PostgreSQL pause lasts PAUSE_S). Printed per fault: instances settled since the fault
began, worst lateness (settled_at - deadline), links sent per instance, and any broken invariant (the
checks of tests/chaos). Sizes: BENCH_CHAOS_TASKS (default 300), BENCH_CHAOS_PAUSE_S (default 20).

Run: .venv/bin/python -m bench.chaos [fault ...]
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from types import FrameType

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.chaos import FAULTS, ChaosRun, Outcome, Shape
from harness.private_services import PrivatePostgres, PrivateRedis

TASKS = int(os.environ.get("BENCH_CHAOS_TASKS", "300"))
EVERY = 5
PAUSE_S = float(os.environ.get("BENCH_CHAOS_PAUSE_S", "20"))
TIME_LIMIT_S = 880


def shape() -> Shape:
    # creating tasks through the API runs at roughly 40/s here: the first burst comes after all exist
    start_in = 5 + TASKS / 30
    return Shape(tasks=TASKS, every=EVERY, start_in=start_in, before=2 * EVERY + 0.5, after=10, pause=PAUSE_S)


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


async def one(pg: PrivatePostgres, fault: str) -> Outcome:
    with PrivateRedis() as redis:
        run = ChaosRun(pg, redis, f"chaos_bench_{uuid.uuid4().hex[:8]}", shape())
        async with run.running():
            outcome = (await run.play([fault]))[0]
        for note in run.notes:
            say(f"{fault}: {note}")
        say(
            f"{fault}: {outcome.instances} settled, worst {outcome.worst_late_s:.2f} s, "
            f"{outcome.links_per_instance:.2f} links/instance, problems: {outcome.problems or 'none'}"
        )
        return outcome


def table(outcomes: list[Outcome]) -> None:
    base = next((o for o in outcomes if o.fault == "none"), None)
    print(
        f"\n== chaos: {TASKS} tasks due together every {EVERY} s, fault 0.5 s into a burst "
        f"(pause {PAUSE_S:.0f} s); load {os.getloadavg()[0]:.1f}"
    )
    print("| fault | settled since the fault | worst lateness | links per instance | invariants |")
    print("|---|---|---|---|---|")
    for o in outcomes:
        beside = f" (no fault: {base.worst_late_s:.2f} s)" if base and o is not base else ""
        links = f" (no fault: {base.links_per_instance:.2f})" if base and o is not base else ""
        verdict = "all held" if not o.problems else "; ".join(o.problems)
        print(
            f"| {o.fault} | {o.instances} | {o.worst_late_s:.2f} s{beside} | {o.links_per_instance:.2f}{links} | {verdict} |"
        )
    sys.stdout.flush()


def _time_up(signum: int, frame: FrameType | None) -> None:
    raise TimeoutError("bench.chaos ran past its time limit")


async def main(faults: list[str]) -> int:
    outcomes: list[Outcome] = []
    with PrivatePostgres() as pg:
        say(f"private PostgreSQL on :{pg.port}")
        for fault in faults:
            outcomes.append(await one(pg, fault))
    table(outcomes)
    return 0 if all(not o.problems for o in outcomes) else 1


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, _time_up)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    signal.alarm(TIME_LIMIT_S)
    chosen = sys.argv[1:] or list(FAULTS)
    sys.exit(asyncio.run(main(chosen)))

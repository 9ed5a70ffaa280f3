"""`proofloop worker --processes N`: N Dramatiq processes on one database share the chain without settling
anything twice; a stop signal stops them all, and one that dies takes the command down with a non-zero code.

Each test has a database and a Redis of its own (private_env), so stopping or killing workers touches
nothing else.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from typing import Any

import asyncpg
import psutil
import redis

from harness.chain_support import eventually, instances_of, settle_events, short_schedule
from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port

PROCESSES = 2
TASKS = 60
ALIASES = 20  # tasks per createTask document
# `proofloop worker` gives Dramatiq 10 s to stop before killing it: room for a loaded machine beyond that
STOP_BOUND_SECONDS = 30.0


def _create_document(count: int) -> str:
    fields = " ".join(
        f"t{i}: createTask(input: {{title: $title, method: PHOTO, schedule: $schedule}}) {{ id }}"
        for i in range(count)
    )
    return f"mutation($title: String!, $schedule: ScheduleInput!) {{ {fields} }}"


async def _burst(api: ApiClient, token: str, schedule: dict[str, Any]) -> list[str]:
    """TASKS tasks with one schedule: their first instances are all due at the same instant."""
    ids: list[str] = []
    for _ in range(TASKS // ALIASES):
        data = await api.execute(
            _create_document(ALIASES), {"title": "Burst", "schedule": schedule}, token=token
        )
        ids.extend(task["id"] for task in data.values())
    return ids


def _dramatiq_processes(worker: WorkerProcess) -> list[psutil.Process]:
    """Dramatiq's worker processes: the children of `proofloop worker`'s Dramatiq main process."""
    assert worker.proc is not None
    main = psutil.Process(worker.proc.pid).children()
    return [p for child in main for p in child.children()]


def _live_consumers(redis_url: str) -> int:
    """Brokers (one per worker process) whose Dramatiq heartbeat is under 3 s old."""
    since = int(time.time() * 1000) - 3000
    return len(redis.Redis.from_url(redis_url).zrangebyscore("dramatiq:__heartbeats__", since, "+inf"))


def _wait_exit(worker: WorkerProcess) -> int:
    assert worker.proc is not None
    try:
        return worker.proc.wait(timeout=STOP_BOUND_SECONDS)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"proofloop worker still runs:\n{worker.log()[-3000:]}") from None


async def test_processes_share_a_burst_settling_each_instance_once(private_env: dict[str, str]) -> None:
    with ServerProcess(private_env, port=free_port()) as server:
        worker = WorkerProcess(private_env, processes=PROCESSES)
        worker.start()
        db = await asyncpg.connect(private_env["PROOFLOOP_DATABASE_URL"])
        try:
            assert len(_dramatiq_processes(worker)) == PROCESSES
            await eventually(
                lambda: asyncio.to_thread(
                    lambda: _live_consumers(private_env["PROOFLOOP_REDIS_URL"]) == PROCESSES
                ),
                10,
                "every worker process consumes from Redis",
            )
            async with ApiClient(server.url) as api:
                token, _ = await api.register()
                task_ids = await _burst(api, token, short_schedule(start_in=6, every=30))

            async def first_instances_settled() -> bool:
                firsts = [(await instances_of(db, task_id))[0] for task_id in task_ids]
                return all(row["status"] == "MISSED" for row in firsts)

            await eventually(first_instances_settled, 60, f"the {TASKS} first instances settled")
            for task_id in task_ids:
                rows = await instances_of(db, task_id)
                assert [row["status"] for row in rows].count("PENDING") == 1, rows
                assert set((await settle_events(db, task_id)).values()) == {1}
        finally:
            await db.close()
            worker.stop()


async def test_a_stop_signal_stops_every_process(private_env: dict[str, str]) -> None:
    worker = WorkerProcess(private_env, processes=PROCESSES)
    worker.start()
    assert worker.proc is not None
    tree = psutil.Process(worker.proc.pid).children(recursive=True)
    assert len(_dramatiq_processes(worker)) == PROCESSES

    worker.proc.send_signal(signal.SIGTERM)

    assert _wait_exit(worker) == 0
    _, alive = psutil.wait_procs(tree, timeout=5)
    assert not alive, [p.cmdline() for p in alive]
    assert worker.log().count("Worker process is ready for action") == PROCESSES


async def test_a_dead_process_stops_the_command_non_zero(private_env: dict[str, str]) -> None:
    worker = WorkerProcess(private_env, processes=PROCESSES)
    worker.start()
    assert worker.proc is not None
    tree = psutil.Process(worker.proc.pid).children(recursive=True)
    victim, *_ = _dramatiq_processes(worker)

    victim.kill()

    assert _wait_exit(worker) != 0
    _, alive = psutil.wait_procs(tree, timeout=5)
    assert not alive, [p.cmdline() for p in alive]
    assert "a Dramatiq process died" in worker.log()

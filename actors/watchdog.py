"""A watchdog over the worker process's Dramatiq consumer threads, and the process's health report.

Dramatiq gives no hook when a consumer thread dies (it did, on a redis-py error during a Redis restart:
see docs/dramatiq-consumer-thread-death.md); the process then lives on without reading that queue.
Every pass this thread starts a fresh consumer for any that died, handing it the delayed messages the
dead one held, counts it, and writes what it saw (consumers, Redis, database) for /readyz.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from typing import Any

from dramatiq.asyncio import get_event_loop_thread
from dramatiq.middleware import Middleware
from dramatiq.worker import ConsumerThread, Worker

from actors.health import HealthReport, remove_report, write_report
from observability.exposition import multiprocess_dir
from observability.metrics import CONSUMER_RESTARTS, CONSUMERS_ALIVE
from observability.outages import outage, report_failure
from services.kit import connection

log = logging.getLogger("proofloop.watchdog")

PASS_SECONDS = 1.0


def died(consumer: ConsumerThread) -> bool:
    """Dead without being asked to stop: `running` is cleared only by a deliberate stop."""
    return consumer.running and not consumer.is_alive()


def restart_consumer(worker: Worker, queue_name: str) -> ConsumerThread:
    """Replace a dead consumer thread by a fresh one for the same queue, built as Worker._add_consumer
    builds it, keeping what the dead one held: its delayed messages and its Redis consumer (worker
    threads ack the messages it handed out through whichever consumer is current)."""
    dead = worker.consumers[queue_name]
    fresh = ConsumerThread(
        broker=worker.broker,
        queue_name=queue_name,
        prefetch=dead.prefetch,
        work_queue=worker.work_queue,
        worker_timeout=dead.worker_timeout,
    )
    fresh.delay_queue = dead.delay_queue
    fresh.consumer = dead.consumer
    worker.consumers[queue_name] = fresh
    fresh.start()
    return fresh


class ConsumerWatchdog(Middleware):
    def __init__(self, ready_timeout_seconds: float = 0.8) -> None:
        self.ready_timeout_seconds = ready_timeout_seconds
        self.worker: Worker | None = None
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None

    def after_worker_boot(self, broker: Any, worker: Worker) -> None:
        self.worker = worker
        self.thread = threading.Thread(target=self._watch, name="proofloop-watchdog", daemon=True)
        self.thread.start()

    def before_worker_shutdown(self, broker: Any, worker: Worker) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(timeout=5)
        directory = multiprocess_dir()
        if directory is not None:
            remove_report(directory, os.getpid())

    def _watch(self) -> None:
        while not self.stopping.wait(PASS_SECONDS):
            try:
                self.look_once()
            except Exception as exc:
                report_failure(log, "watchdog pass", exc, "watchdog pass failed")

    def look_once(self) -> HealthReport:
        assert self.worker is not None
        checks: dict[str, str] = {}
        alive = 0
        for queue_name, consumer in list(self.worker.consumers.items()):
            if died(consumer):
                log.error("consumer thread for %s died; starting a fresh one", queue_name)
                CONSUMER_RESTARTS.labels(queue=queue_name).inc()
                consumer = restart_consumer(self.worker, queue_name)
            alive += consumer.is_alive()
            checks[f"consumer {queue_name}"] = "ok" if consumer.is_alive() else "dead"
        CONSUMERS_ALIVE.set(alive)
        checks["redis"] = self._check_redis()
        checks["database"] = self._check_database()
        report = HealthReport(pid=os.getpid(), at=time.time(), checks=checks)
        directory = multiprocess_dir()
        if directory is not None:
            write_report(directory, report)
        return report

    def _check_redis(self) -> str:
        assert self.worker is not None
        try:
            self.worker.broker.client.ping()  # type: ignore[attr-defined]
        except Exception as exc:
            outage("redis").failed("health check", exc)
            return f"error: {type(exc).__name__}"
        outage("redis").answered()  # this pass is the worker's probe: it ends an outage
        return "ok"

    def _check_database(self) -> str:
        loop_thread = get_event_loop_thread()
        if loop_thread is None:
            return "error: no event loop"
        future = asyncio.run_coroutine_threadsafe(self._select_one(), loop_thread.loop)
        try:
            future.result(timeout=self.ready_timeout_seconds + 0.5)
        except Exception as exc:
            future.cancel()
            outage("database").failed("health check", exc)
            return f"error: {type(exc).__name__}"
        outage("database").answered()
        return "ok"

    async def _select_one(self) -> None:
        await asyncio.wait_for(connection().execute_query("SELECT 1"), self.ready_timeout_seconds)

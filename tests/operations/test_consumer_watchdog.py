"""A Redis outage while the worker moves due delayed messages: Dramatiq 2.2.1's consumer thread dies
(docs/dramatiq-consumer-thread-death.md); the watchdog starts a fresh one, and our broker avoids the death.

Real Dramatiq workers in this process on a private redis-server that the test stops and starts again.
The worker's delayed-message prefetch equals what it holds, so it sends Redis nothing until those are
due: the outage first meets the thread while it re-queues a due message, as in production bursts.
"""

from __future__ import annotations

import threading
import time

import dramatiq
import pytest
from dramatiq.brokers.redis import RedisBroker
from dramatiq.worker import Worker
from prometheus_client import REGISTRY

from actors.sturdy_redis import SturdyRedisBroker
from actors.watchdog import ConsumerWatchdog
from harness.private_services import PrivateRedis

HELD = 5
QUEUE = "probe"


def _restarts(queue: str) -> float:
    value = REGISTRY.get_sample_value("proofloop_worker_consumer_restarts_total", {"queue": queue})
    return value or 0.0


def _until(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.05)


def _outage_while_moving_due_messages(broker: RedisBroker, server: PrivateRedis) -> tuple[float, set[int]]:
    """Restarts of the delayed-message consumer seen across the outage, and what ran after it."""
    ran: set[int] = set()
    lock = threading.Lock()

    @dramatiq.actor(broker=broker, queue_name=QUEUE, max_retries=0)
    def probe(n: int) -> None:
        with lock:
            ran.add(n)

    broker.add_middleware(ConsumerWatchdog())
    worker = Worker(broker, worker_threads=1, worker_timeout=100)
    worker.delay_prefetch = HELD
    before = _restarts(f"{QUEUE}.DQ")
    worker.start()
    try:
        for n in range(HELD):
            probe.send_with_options(args=(n,), delay=1500)
        _until(
            lambda: broker.client.llen(f"dramatiq:{QUEUE}.DQ") == 0,
            10,
            "the worker holds the delayed messages",
        )
        server.stop()
        time.sleep(4)  # the messages fall due while Redis is down; the watchdog looks every second
        restarts = _restarts(f"{QUEUE}.DQ") - before
        server.start()
        probe.send(100)
        probe.send_with_options(args=(101,), delay=200)
        _until(lambda: {100, 101} <= ran, 20, "messages sent after the outage ran")
        assert all(c.is_alive() for c in worker.consumers.values())
        return restarts, ran
    finally:
        worker.stop(timeout=5000)
        broker.close()


@pytest.mark.timeout(60)
# the death under test: the thread's uncaught redis-py ConnectionError
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_dramatiqs_consumer_thread_dies_in_an_outage_and_the_watchdog_starts_a_fresh_one() -> None:
    with PrivateRedis() as server:
        restarts, _ = _outage_while_moving_due_messages(RedisBroker(url=server.url), server)  # type: ignore[no-untyped-call]
    assert restarts >= 1


@pytest.mark.timeout(60)
def test_our_broker_keeps_its_consumer_thread_through_the_outage() -> None:
    with PrivateRedis() as server:
        broker = SturdyRedisBroker(url=server.url)
        restarts, _ = _outage_while_moving_due_messages(broker, server)
    assert restarts == 0

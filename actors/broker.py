"""The Redis broker, shared by the API (which only sends) and the workers (which also consume)."""

from __future__ import annotations

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import Middleware

# Precision: idle workers poll the delay queue this often (ms); the default 1000 ms costs ~0.6 s p50.
WORKER_TIMEOUT_MS = 100


def configure_broker(redis_url: str, extra_middleware: list[Middleware] | None = None) -> RedisBroker:
    broker = RedisBroker(url=redis_url)  # type: ignore[no-untyped-call]
    for middleware in extra_middleware or []:
        broker.add_middleware(middleware)
    dramatiq.set_broker(broker)
    return broker

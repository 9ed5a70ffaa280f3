"""Dramatiq 2.2.1's Redis broker with two changes the chain needs (docs/dramatiq-consumer-thread-death.md).

1. The consumer's requeue() turns redis-py's connection and timeout errors into Dramatiq's
   ConnectionClosed. ConsumerThread.close() requeues the messages it holds and catches only Dramatiq's
   error; it runs inside the thread's own `except` handler after a Redis outage, so a redis-py error
   there killed the delayed-message thread for good while the process lived on. With the error
   translated, close() swallows it and the thread restarts its consumer as designed.
2. A chain message that failed for good is dropped, not kept 7 days in the dead-letter queue: its
   database row still owes the work and the pump resends it. Every dead letter is counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import redis
from dramatiq.broker import MessageProxy
from dramatiq.brokers.redis import RedisBroker, _RedisConsumer
from dramatiq.common import q_name
from dramatiq.errors import ConnectionClosed

from observability.metrics import DEAD_LETTERS

_CONNECTION_ERRORS = (redis.ConnectionError, redis.TimeoutError)


class SturdyRedisConsumer(_RedisConsumer):
    def requeue(self, messages: Iterable[MessageProxy]) -> None:
        try:
            super().requeue(messages)  # type: ignore[no-untyped-call]
        except _CONNECTION_ERRORS as exc:
            raise ConnectionClosed(exc) from None  # type: ignore[no-untyped-call]

    def nack(self, message: MessageProxy) -> None:
        queue = q_name(self.queue_name)
        drop = queue in self.broker.disposable_queues
        DEAD_LETTERS.labels(queue=queue, kept="no" if drop else "yes").inc()
        if not drop:
            super().nack(message)  # type: ignore[no-untyped-call]
            return
        try:
            self.broker.do_ack(self.queue_name, message.options["redis_message_id"])
        except _CONNECTION_ERRORS as exc:
            raise ConnectionClosed(exc) from None  # type: ignore[no-untyped-call]
        finally:
            self.queued_message_ids.discard(message.message_id)


class SturdyRedisBroker(RedisBroker):
    """`disposable_queues`: queues whose failed messages are dropped (the database is their retry)."""

    def __init__(self, *, disposable_queues: frozenset[str] = frozenset(), **options: Any) -> None:
        super().__init__(**options)  # type: ignore[no-untyped-call]
        self.disposable_queues = disposable_queues

    @property
    def consumer_class(self) -> type[SturdyRedisConsumer]:
        return SturdyRedisConsumer

"""Messages sent from a transaction leave after its commit, all together and in order, or not at all."""

from __future__ import annotations

import json
import uuid

import pytest
import redis

from actors.broker import configure_broker
from services.kit.db import write_transaction
from services.kit.messaging import Outgoing, send_after_commit

pytestmark = pytest.mark.usefixtures("orm")


class Rollback(Exception):
    pass


def queued_args(client: redis.Redis, queue: str) -> list[list[object]]:
    ids = client.lrange(f"dramatiq:{queue}", 0, -1)
    bodies = client.hmget(f"dramatiq:{queue}.msgs", ids) if ids else []
    return sorted((json.loads(body or "{}")["args"] for body in bodies), key=lambda args: str(args[0]))


async def test_a_transactions_messages_leave_together_after_commit(redis_url: str) -> None:
    configure_broker(redis_url)
    client = redis.Redis.from_url(redis_url)
    queue = f"test-after-commit-{uuid.uuid4().hex}"  # no worker reads it
    async with write_transaction():
        for n in range(3):
            send_after_commit(Outgoing("test.noop", (n,), queue_name=queue))
        async with write_transaction():  # a nested one joins the outer batch
            send_after_commit(Outgoing("test.noop", (3,), queue_name=queue))
        assert queued_args(client, queue) == []  # nothing leaves before COMMIT
    assert queued_args(client, queue) == [[0], [1], [2], [3]]


async def test_a_rolled_back_transactions_messages_never_leave(redis_url: str) -> None:
    configure_broker(redis_url)
    client = redis.Redis.from_url(redis_url)
    queue = f"test-after-commit-{uuid.uuid4().hex}"

    async def send_then_fail() -> None:
        async with write_transaction():
            send_after_commit(Outgoing("test.noop", (0,), queue_name=queue))
            raise Rollback

    with pytest.raises(Rollback):
        await send_then_fail()
    async with write_transaction():
        send_after_commit(Outgoing("test.noop", (1,), queue_name=queue))
    assert queued_args(client, queue) == [[1]]


async def test_a_message_outside_a_transaction_is_refused() -> None:
    with pytest.raises(RuntimeError):
        send_after_commit(Outgoing("test.noop", (0,)))

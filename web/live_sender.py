"""One sender per websocket: it carries the socket's subscriptions once their replay is done.

A subscription running as its own task kept ~60 objects the cyclic collector tracks (the task, its
coroutines, the resolver's generator, an executor), so 10,000 of them made each full collection stop
the event loop for a quarter of a second. Handed off (`schema/live_subscriptions.py`), a subscription is
its hub subscriber and one `Parked` record: the socket's one task takes the events the hub queued,
executes each once per shared `LiveStream` (one per document, variables and operation name) and writes
one `next` frame per subscription. A subscriber that ends (too slow, partnership ended, token revoked,
shutdown) sends the ending error and `complete` last, as its own task did; a client's `complete` or
the socket's end removes it without a frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from strawberry.types import ExecutionResult

from observability.metrics import HANDED_OFF_SUBSCRIPTIONS
from realtime.hub import Hub
from realtime.subscribers import Subscriber
from schema.live_subscriptions import HandedOff, LiveStream

log = logging.getLogger("proofloop.live")

Send = Callable[[Any], Awaitable[None]]
StreamKey = tuple[str, str | None, str]  # document, operation name, variables as sorted JSON
Release = Callable[[], None]


class Parked:
    """A handed-off subscription: which operation of the socket it is and how its events execute."""

    __slots__ = ("feed", "operation_id", "release", "stream_key", "subscriber")

    def __init__(self, operation_id: str, handed: HandedOff, key: StreamKey, release: Release | None) -> None:
        self.operation_id = operation_id
        self.subscriber = handed.subscriber
        self.feed = handed.feed
        self.stream_key = key
        self.release = release


def next_payload(result: ExecutionResult) -> dict[str, Any]:
    """The payload of graphql-transport-ws's `next`, as Strawberry's `Operation.send_next` writes it."""
    payload: dict[str, Any] = {"data": result.data}
    if result.errors:
        payload["errors"] = [error.formatted for error in result.errors]
    if result.extensions:
        payload["extensions"] = result.extensions
    return payload


class LiveSender:
    def __init__(self, hub: Hub, send: Send, forget: Callable[[str], None]) -> None:
        self._hub = hub
        self._send = send
        self._forget = forget  # the socket handler's record of the operation id
        self._parked: dict[str, Parked] = {}  # by operation id
        self._of: dict[Subscriber, Parked] = {}
        self._streams: dict[StreamKey, tuple[LiveStream, int]] = {}  # with how many subscriptions use it
        self._ready: dict[Subscriber, Parked] = {}  # woken, in the order they woke
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def park(self, operation_id: str, handed: HandedOff, key: StreamKey, release: Release | None) -> None:
        """Carry `handed` from now on; `release` gives back its admission once it ends."""
        shared = self._streams.get(key)
        stream, users = shared if shared is not None else (handed.stream, 0)
        self._streams[key] = (stream, users + 1)
        parked = Parked(operation_id, handed, key, release)
        self._parked[operation_id] = parked
        self._of[handed.subscriber] = parked
        HANDED_OFF_SUBSCRIPTIONS.inc()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="live-sender")
        handed.subscriber.listen(self)  # wakes at once if events queued meanwhile

    def wake(self, subscriber: Subscriber) -> None:
        parked = self._of.get(subscriber)
        if parked is not None and subscriber not in self._ready:
            self._ready[subscriber] = parked
            self._wake.set()

    def unpark(self, operation_id: str) -> bool:
        """The client completed the operation, or the socket ended: no frame. False if not parked here."""
        parked = self._parked.get(operation_id)
        if parked is None:
            return False
        self._end(parked)
        return True

    async def close(self) -> None:
        for operation_id in list(self._parked):
            self.unpark(operation_id)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _end(self, parked: Parked) -> None:
        del self._parked[parked.operation_id]
        del self._of[parked.subscriber]
        HANDED_OFF_SUBSCRIPTIONS.dec()
        self._ready.pop(parked.subscriber, None)
        self._hub.remove(parked.subscriber)
        stream, users = self._streams[parked.stream_key]
        if users > 1:
            self._streams[parked.stream_key] = (stream, users - 1)
        else:
            del self._streams[parked.stream_key]
        if parked.release is not None:
            parked.release()

    async def _run(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                # an event that reaches several subscriptions of one stream here is executed once
                executed: dict[tuple[StreamKey, int], dict[str, Any]] = {}
                while self._ready:
                    subscriber, parked = next(iter(self._ready.items()))
                    del self._ready[subscriber]
                    await self._deliver(parked, executed)
                    await asyncio.sleep(0)  # other sockets' senders and requests take turns
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the socket is gone mid-send: its handler's shutdown unparks the rest
            log.debug("live sender stopped: %s", exc)

    async def _deliver(self, parked: Parked, executed: dict[tuple[StreamKey, int], dict[str, Any]]) -> None:
        subscriber = parked.subscriber
        stream = self._streams[parked.stream_key][0]
        for row in subscriber.take_events():
            position = row.position or 0
            if subscriber.ended is not None:
                break
            if position <= subscriber.last_sent or not subscriber.wants(row):
                continue  # already replayed, or the partnership ended after it was queued
            subscriber.last_sent = position
            payload = executed.get((parked.stream_key, position))
            if payload is None:
                try:
                    result = await stream.execute(parked.feed.payload(stream.context, row))
                except Exception as exc:  # as in the subscription's own stream: the error is the result
                    result = stream.ended(exc)
                payload = next_payload(result)
                executed[(parked.stream_key, position)] = payload
            if parked.operation_id not in self._parked:
                return  # completed by its client while the event executed
            await self._send({"id": parked.operation_id, "type": "next", "payload": payload})
        if subscriber.ended is not None and self._parked.get(parked.operation_id) is parked:
            error = parked.feed.ending(stream.context, subscriber.ended, subscriber.last_sent)
            subscriber.take_events()  # the end is taken: the hub's backlog count drops it
            self._end(parked)
            self._forget(parked.operation_id)  # before the last frames, as Strawberry's operations do
            ending = next_payload(stream.ended(error))
            await self._send({"id": parked.operation_id, "type": "next", "payload": ending})
            await self._send({"id": parked.operation_id, "type": "complete"})

"""A deadline for request bodies: uvicorn waits for a trickling body forever, holding a connection and a task.

The body must arrive within `timeout` seconds plus one second per `min_rate` bytes received (as Apache's
mod_reqtimeout does), so a slow phone uploading a large video passes and a byte every few seconds does
not. Over the deadline the request is answered 408 and its connection closed.
"""

from __future__ import annotations

import asyncio
import json
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTimedOut(Exception):
    """Raised from receive() when the body misses its deadline (the app's own answer is then dropped)."""


class SlowBodyGuard:
    def __init__(self, app: ASGIApp, *, timeout: float, min_rate: int) -> None:
        self.app = app
        self.timeout = timeout
        self.min_rate = min_rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        received = 0
        body_done = False
        timed_out = False
        response_started = False

        async def guarded_receive() -> Message:
            nonlocal received, body_done, timed_out
            if body_done:
                return await receive()  # past the body: only a disconnect is left to wait for
            remaining = started + self.timeout + received / self.min_rate - time.monotonic()
            try:
                message = await asyncio.wait_for(receive(), timeout=max(remaining, 0.0))
            except TimeoutError:
                timed_out = True
                raise BodyTimedOut from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if timed_out:
                return
            response_started = response_started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except Exception:
            if not timed_out:
                raise
        if timed_out and not response_started:
            await _refuse_slow_body(send)


async def _refuse_slow_body(send: Send) -> None:
    error = {
        "message": "body: the request body arrived too slowly",
        "extensions": {"code": "BAD_USER_INPUT", "field": "body"},
    }
    body = json.dumps({"errors": [error]}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),  # the rest of a trickling body is not worth reading
    ]
    await send({"type": "http.response.start", "status": 408, "headers": headers})
    await send({"type": "http.response.body", "body": body})

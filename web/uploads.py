"""Request bodies are capped before parsing: multipart uploads at PROOFLOOP_MAX_UPLOAD_BYTES and only with a
valid bearer token (else 401), plain GraphQL documents at 1 MiB (413 PAYLOAD_TOO_LARGE over either).

Every request is stamped with its arrival before anything is read (a proof is judged then).
Only the headers decide a refusal up front; a body without Content-Length is counted as it streams into
the GraphQL view and cut off with a 413 once over. The body is never buffered here.
"""

from __future__ import annotations

import json
import time

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from observability.outages import outage
from schema.errors import unavailable, unavailable_after
from services.accounts import authenticate, bearer_token
from services.kit import ServiceUnavailable, Unauthenticated, whole_number
from settings import Settings
from web.arrival import ARRIVED_MONOTONIC
from web.graphql_view import response_media_type, unavailable_response

GRAPHQL_PATH = "/graphql"
# A GraphQL document with its variables (no files) has no business being larger than this.
MAX_DOCUMENT_BYTES = 1024 * 1024


class BodyTooLarge(Exception):
    """Raised from receive() once the body passes the limit (not a ValueError: nobody turns it into a 400)."""


async def refuse(send: Send, status: int, code: str, message: str, *, close: bool = False) -> None:
    """A GraphQL-shaped error; without `close` the server discards the unread body, keeping the connection."""
    body = json.dumps({"errors": [{"message": message, "extensions": {"code": code}}]}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _is_multipart(scope: Scope, headers: Headers) -> bool:
    content_type = headers.get("content-type", "").strip().lower()
    return (
        scope["method"] == "POST" and scope["path"] == GRAPHQL_PATH and content_type.startswith("multipart/")
    )


class UploadLimits:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # a proof's time is its request's arrival, not the end of a slow body (schema/context.arrival)
        scope.setdefault("state", {})[ARRIVED_MONOTONIC] = time.monotonic()
        headers = Headers(scope=scope)
        if scope["method"] != "POST" or scope["path"] != GRAPHQL_PATH:
            await self.app(scope, receive, send)
            return
        limit = MAX_DOCUMENT_BYTES
        if _is_multipart(scope, headers):
            try:
                authenticated = await self._authenticated(scope, headers)
            except ServiceUnavailable as refused:
                accept = response_media_type(headers.get("accept", ""))
                await unavailable_response(refused, accept)(scope, receive, send)
                return
            if not authenticated:
                await refuse(
                    send, 401, "UNAUTHENTICATED", "uploads need an Authorization: Bearer <token> header"
                )
                return
            limit = self.settings.max_upload_bytes
        declared = whole_number(headers.get("content-length"))
        if declared is not None and declared > limit:
            await self._too_large(send, limit)
            return
        await self._run_counted(scope, receive, send, limit)

    async def _authenticated(self, scope: Scope, headers: Headers) -> bool:
        token = bearer_token(headers.get("authorization"))
        if token is None:
            return False
        if outage("database").down:
            raise unavailable("database")
        try:
            session = await authenticate(token, token_ttl_seconds=self.settings.token_ttl_seconds)
        except Unauthenticated:
            return False
        except Exception as exc:
            if (refused := unavailable_after(exc, "upload authentication")) is None:
                raise
            raise refused from None
        scope.setdefault("state", {})["session"] = session  # request.state: the GraphQL context reuses it
        return True

    async def _too_large(self, send: Send, limit: int) -> None:
        # an oversized upload is not worth receiving, even to discard it; a small document is
        await refuse(
            send,
            413,
            "PAYLOAD_TOO_LARGE",
            f"the request body is larger than {limit} bytes",
            close=limit > MAX_DOCUMENT_BYTES,
        )

    async def _run_counted(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        received = 0
        over = False
        started = False

        async def counted_receive() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    over = True
                    raise BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if over:
                return  # whatever the view makes of the cut-off body, the answer is our 413
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if not over:
                raise
        if over and not started:
            await self._too_large(send, limit)

"""uvicorn's HTTP protocol with the two guards uvicorn lacks: a header deadline and a header size cap.

uvicorn closes idle keep-alive connections (timeout_keep_alive) and refuses work over
limit_concurrency, but a socket that connects and sends nothing, or trickles its headers a byte at a
time, is kept forever, and httptools has no cap on header size. Here a request's headers must be
complete within `header_timeout` of the connection opening (or of the request's first byte on a
kept-alive connection) and within `max_header_bytes`; otherwise the connection is answered 408 / 431
and closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class HeadersTooLarge(Exception):
    pass


def _refusal(status: bytes) -> bytes:
    return b"HTTP/1.1 " + status + b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class GuardedHttpProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, header_timeout: float, max_header_bytes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout
        self.max_header_bytes = max_header_bytes
        self._header_deadline: asyncio.TimerHandle | None = None
        self._header_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        if self._header_deadline is None:
            self._arm_header_deadline()  # the next request on a kept-alive connection

    def on_url(self, url: bytes) -> None:
        self._count_header_bytes(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_header_bytes(len(name) + len(value))
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._disarm_header_deadline()  # before a websocket upgrade hands the transport over
        super().on_headers_complete()

    def _count_header_bytes(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > self.max_header_bytes:
            self._refuse(b"431 Request Header Fields Too Large")
            raise HeadersTooLarge  # stops the parser; uvicorn's 400 for it is suppressed below

    def send_400_response(self, msg: str) -> None:
        if not self.transport.is_closing():
            super().send_400_response(msg)

    def _arm_header_deadline(self) -> None:
        self._header_deadline = self.loop.call_later(
            self.header_timeout, self._refuse, b"408 Request Timeout"
        )

    def _disarm_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _refuse(self, status: bytes) -> None:
        self._disarm_header_deadline()
        if not self.transport.is_closing():
            self.transport.write(_refusal(status))
            self.transport.close()

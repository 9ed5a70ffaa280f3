"""GraphQL over SSE with LF line endings: the SSE spec allows CRLF, but urql's stream parser splits events
on a blank line of bare LFs only, so a CRLF stream reached it as one event that never ends."""

from __future__ import annotations

from strawberry.http.streaming import SSETransport


class LineFeedSSETransport(SSETransport):
    def encode_event(self, event: str, data: str | None = None) -> str:
        return super().encode_event(event, data).replace("\r\n", "\n")

    def encode_comment(self, comment: str) -> str:
        return super().encode_comment(comment).replace("\r\n", "\n")

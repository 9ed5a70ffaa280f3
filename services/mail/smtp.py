"""PROOFLOOP_SMTP_URL, read once: smtp://user:pass@host:port (STARTTLS when offered, or forced with
?starttls=true; never with ?starttls=false) and smtps://host:port (TLS from the first byte)."""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage
from urllib.parse import parse_qs, unquote, urlsplit

import aiosmtplib

SEND_TIMEOUT_SECONDS = 30


@dataclass(frozen=True)
class SmtpServer:
    host: str
    port: int
    username: str | None
    password: str | None
    use_tls: bool
    start_tls: bool | None  # None: upgrade when the server offers it

    @classmethod
    def from_url(cls, url: str) -> SmtpServer:
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ValueError("PROOFLOOP_SMTP_URL must look like smtp://user:pass@host:port or smtps://…")
        starttls = parse_qs(parts.query).get("starttls", [""])[0].lower()
        return cls(
            host=parts.hostname,
            port=parts.port or (465 if parts.scheme == "smtps" else 25),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            use_tls=parts.scheme == "smtps",
            start_tls={"true": True, "false": False}.get(starttls),
        )

    async def send(self, message: EmailMessage) -> None:
        await aiosmtplib.send(
            message,
            hostname=self.host,
            port=self.port,
            username=self.username,
            password=self.password,
            use_tls=self.use_tls,
            start_tls=None if self.use_tls else self.start_tls,
            timeout=SEND_TIMEOUT_SECONDS,
        )

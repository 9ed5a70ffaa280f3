"""A real SMTP server (aiosmtpd) in the test process, and the mail it received."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller

from harness.ports import free_port

_TOKEN = re.compile(r"[?&]token=([A-Za-z0-9_\-]+)")


class Mailbox:
    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        # (recipient, subject) of each message, read once: a parsed header is parsed again on every read,
        # and tests poll a mailbox that holds the whole run's mail
        self._addressed: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self.port = free_port()
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def __enter__(self) -> Mailbox:
        self._controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._controller.stop()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = message_from_bytes(envelope.content, policy=policy.default)
        assert isinstance(message, EmailMessage)
        addressed = (str(message["To"]).lower(), str(message["Subject"]))
        with self._lock:
            self.messages.append(message)
            self._addressed.append(addressed)
        return "250 Message accepted for delivery"

    def to(self, recipient: str, subject: str = "") -> list[EmailMessage]:
        recipient = recipient.lower()
        with self._lock:
            return [
                m
                for m, (to, title) in zip(self.messages, self._addressed, strict=True)
                if to == recipient and subject in title
            ]

    async def wait_for(
        self, recipient: str, subject: str = "", count: int = 1, timeout: float = 30
    ) -> EmailMessage:
        """The latest mail to `recipient` whose subject contains `subject`, once `count` of them arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.to(recipient, subject)
            if len(found) >= count:
                return found[-1]
            await asyncio.sleep(0.05)
        raise AssertionError(f"no mail {subject!r} to {recipient} within {timeout} s")


def text_of(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content())


def html_of(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("html",))
    assert part is not None
    return str(part.get_content())


def mailed_token(message: EmailMessage) -> str:
    found = _TOKEN.search(text_of(message))
    assert found is not None, "the mail carries no link with a token"
    return found.group(1)

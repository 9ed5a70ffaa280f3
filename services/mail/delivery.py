"""Deliver one outbox row: over SMTP, or (no PROOFLOOP_SMTP_URL) as an .eml file with its link logged."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path

from tortoise.expressions import F

from models import OutgoingMail
from services.kit import db_now
from services.mail.smtp import SmtpServer

log = logging.getLogger("proofloop.mail")

_LINK = re.compile(r"https?://\S+")


def build_message(row: OutgoingMail, sender: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = row.recipient
    message["Subject"] = row.subject
    message["Date"] = formatdate(row.created_at.timestamp(), localtime=False)
    message["Message-ID"] = make_msgid(idstring=str(row.id), domain="proofloop")
    message.set_content(row.text_body)
    message.add_alternative(row.html_body, subtype="html")
    return message


def write_eml(message: EmailMessage, mail_dir: Path, row: OutgoingMail) -> Path:
    mail_dir.mkdir(parents=True, exist_ok=True)
    path = mail_dir / f"{row.created_at:%Y%m%dT%H%M%S}-{row.id}.eml"
    path.write_bytes(bytes(message))
    return path


@dataclass(frozen=True)
class MailRoute:
    """Where mail goes: an SMTP server (PROOFLOOP_SMTP_URL), or .eml files under `mail_dir` without one."""

    smtp_url: str | None
    sender: str
    mail_dir: Path


async def deliver(mail_id: str, route: MailRoute) -> bool:
    """Send the row once; False when it is gone or already sent (a duplicate delivery of the message)."""
    smtp_url, sender, mail_dir = route.smtp_url, route.sender, route.mail_dir
    row = await OutgoingMail.get_or_none(id=mail_id)
    if row is None or row.sent_at is not None:
        return False
    await OutgoingMail.filter(id=row.id).update(attempts=F("attempts") + 1)
    message = build_message(row, sender)
    if smtp_url:
        await SmtpServer.from_url(smtp_url).send(message)
        log.info("mail %s sent", row.id)
    else:
        path = write_eml(message, mail_dir, row)
        link = _LINK.search(row.text_body)
        # the embedded default has no mail server: the log is how a developer follows the link
        log.info("mail %s written to %s%s", row.id, path, f"; link: {link.group(0)}" if link else "")
    # the bodies may hold a single-use link: keep them only until the message has left
    await OutgoingMail.filter(id=row.id, sent_at=None).update(
        sent_at=await db_now(), text_body="", html_body=""
    )
    return True

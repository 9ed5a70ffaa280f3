"""Queue a mail in the current transaction; it is delivered after commit by the mail actor."""

from __future__ import annotations

from models import OutgoingMail
from services.db import write_transaction
from services.mail.messages import MailContent
from services.messaging import MAIL_QUEUE, Outgoing, send_after_commit

DELIVER_ACTOR = "mail.deliver"


async def queue_mail(recipient: str, content: MailContent) -> None:
    """Record the message with the change that causes it: a rollback drops both, a commit sends it."""
    async with write_transaction():
        row = await OutgoingMail.create(
            recipient=recipient, subject=content.subject, text_body=content.text, html_body=content.html
        )
        send_after_commit(Outgoing(DELIVER_ACTOR, (str(row.id),), queue_name=MAIL_QUEUE))

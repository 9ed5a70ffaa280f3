"""Queue a mail in the current transaction; it is delivered after commit by the mail actor."""

from __future__ import annotations

from datetime import timedelta

from models import OutgoingMail
from services.kit import MAIL_QUEUE, Outgoing, db_now, send, send_after_commit, write_transaction
from services.mail.messages import MailContent

DELIVER_ACTOR = "mail.deliver"
# a row never attempted this long after commit lost its message (Redis down at the send): send it again
STRANDED_AFTER = timedelta(minutes=5)
KEEP_SENT = timedelta(days=30)
SWEEP_BATCH = 100


async def queue_mail(recipient: str, content: MailContent) -> None:
    """Record the message with the change that causes it: a rollback drops both, a commit sends it."""
    async with write_transaction():
        row = await OutgoingMail.create(
            recipient=recipient, subject=content.subject, text_body=content.text, html_body=content.html
        )
        send_after_commit(Outgoing(DELIVER_ACTOR, (str(row.id),), queue_name=MAIL_QUEUE))


async def resend_stranded_mail() -> int:
    """Send again the messages of rows nobody ever tried to deliver; forget rows sent long ago."""
    now = await db_now()
    await OutgoingMail.filter(sent_at__lt=now - KEEP_SENT).delete()
    rows = (
        await OutgoingMail.filter(sent_at=None, attempts=0, created_at__lt=now - STRANDED_AFTER)
        .order_by("created_at")
        .limit(SWEEP_BATCH)
    )
    claimed = []
    for row in rows:
        # compare-and-set: of several worker processes sweeping at once, one resends each row
        if await OutgoingMail.filter(id=row.id, attempts=0, created_at=row.created_at).update(created_at=now):
            claimed.append(Outgoing(DELIVER_ACTOR, (str(row.id),), queue_name=MAIL_QUEUE))
    await send(claimed)
    return len(claimed)

"""Mail: messages rendered as text and HTML, queued in an outbox row, delivered after commit by a worker."""

from __future__ import annotations

from services.mail.delivery import MailRoute, deliver
from services.mail.outbox import DELIVER_ACTOR, queue_mail, resend_stranded_mail

__all__ = ["DELIVER_ACTOR", "MailRoute", "deliver", "queue_mail", "resend_stranded_mail"]

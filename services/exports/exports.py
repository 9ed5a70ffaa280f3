"""Data exports: asked for through the API, built by a worker, mailed as a link that expires.

A request writes a PENDING row and, after commit, an `exports.build` message on the mail queue (user-facing
work that never takes a chain thread). The build reads everything of the user's (archive.py), keeps the
zip in the archive store (the data dir's `exports/`, or the media store's bucket, which every host
reaches), then in one transaction marks the row READY with the digest of a new link token and queues
the mail with the link, so a link is mailed exactly when its archive exists. Rows
whose message was lost are sent again by the workers' sweep, and archives past their link's life are
removed by it. Downloads (web/exports.py) check the token against the digest in constant time.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from uuid import UUID

from tortoise.queryset import QuerySet

from models import DataExport, ExportStatus, User
from services.accounts import token_digest
from services.exports.archive import gather, write_archive
from services.kit import (
    MAIL_QUEUE,
    Forbidden,
    Outgoing,
    RateLimited,
    db_now,
    send,
    send_after_commit,
    write_transaction,
)
from services.mail import queue_mail
from services.mail.messages import data_export_ready
from storage import ArchiveStore, BlobStore

BUILD_ACTOR = "exports.build"
DAY = timedelta(days=1)
# a PENDING row whose build has not started this long after its message went out lost the message
STRANDED_AFTER = timedelta(minutes=5)


@dataclass(frozen=True)
class ExportRules:
    per_day: int
    link_seconds: int
    link_base: str  # where /exports/<id> is reached: the API's public address, or the frontend's


def build_message(export_id: str) -> Outgoing:
    return Outgoing(BUILD_ACTOR, (export_id,), queue_name=MAIL_QUEUE)


def archive_name(export_id: object) -> str:
    return f"{UUID(str(export_id))}.zip"


async def request_export(user: User, rules: ExportRules) -> DataExport:
    """A new PENDING export; RATE_LIMITED past the per-day budget, counted under the user's row lock so
    concurrent requests never pass it together. The link goes to the account's address, so only a
    verified one: else a typo at registration would mail someone else everything of the user's."""
    if user.email_verified_at is None:
        raise Forbidden("verify your email address first: the export's link is mailed there")
    async with write_transaction():
        await User.filter(id=user.id).select_for_update().first()
        now = await db_now()
        recent = await DataExport.filter(user_id=user.id, requested_at__gt=now - DAY).order_by("requested_at")
        if len(recent) >= rules.per_day:
            wait = int((recent[0].requested_at + DAY - now).total_seconds()) + 1
            raise RateLimited(
                f"{rules.per_day} exports a day at most (PROOFLOOP_EXPORTS_PER_DAY); "
                f"try again in {wait} seconds",
                wait,
            )
        row = await DataExport.create(user_id=user.id, sent_at=now)
        send_after_commit(build_message(str(row.id)))
    return row


def exports_of(user: User) -> QuerySet[DataExport]:
    return DataExport.filter(user_id=user.id).order_by("-requested_at")


async def build_export(export_id: str, rules: ExportRules, media: BlobStore, archives: ArchiveStore) -> bool:
    """Build a PENDING export and mail its link; False when there is nothing to build (already built,
    expired, or the row is gone)."""
    row = await DataExport.filter(id=export_id, status=ExportStatus.PENDING).select_related("user").first()
    if row is None:
        return False
    contents = await gather(row.user)
    size = await write_archive(contents, media, archives, archive_name(row.id))
    token = secrets.token_urlsafe(32)
    async with write_transaction():
        now = await db_now()
        expires_at = now + timedelta(seconds=rules.link_seconds)
        built = await DataExport.filter(id=row.id, status=ExportStatus.PENDING).update(
            status=ExportStatus.READY,
            ready_at=now,
            expires_at=expires_at,
            size_bytes=size,
            token_digest=token_digest(token),
        )
        if not built:  # another build of the same row won: its link is the one mailed
            return False
        link = f"{rules.link_base.rstrip('/')}/exports/{row.id}?token={token}"
        await queue_mail(row.user.email, data_export_ready(link, expires_at, size))
    return True


async def downloadable(export_id: str, token: str) -> str | None:
    """The name of the archive a link names, if its token is right and it has not expired; None for
    anything else (a wrong token, someone else's id and a missing one answer alike)."""
    try:
        key = UUID(export_id)
    except ValueError:
        return None
    row = await DataExport.get_or_none(id=key, status=ExportStatus.READY)
    now = await db_now()
    given = token_digest(token)
    if row is None or row.token_digest is None or row.expires_at is None or row.expires_at <= now:
        return None
    if not hmac.compare_digest(given, row.token_digest):
        return None
    return archive_name(row.id)


async def downloadable_by_owner(export_id: str, user_id: str) -> str | None:
    """The name of `user_id`'s READY, unexpired archive `export_id` (a signed link vouched for the user)."""
    try:
        key = UUID(export_id)
    except ValueError:
        return None
    row = await DataExport.get_or_none(id=key, user_id=user_id, status=ExportStatus.READY)
    if row is None or row.expires_at is None or row.expires_at <= await db_now():
        return None
    return archive_name(row.id)


async def sweep_exports(archives: ArchiveStore) -> tuple[int, int]:
    """(builds sent again, archives removed): PENDING rows whose message was lost, and READY ones expired."""
    now = await db_now()
    stranded = await DataExport.filter(status=ExportStatus.PENDING, sent_at__lt=now - STRANDED_AFTER).limit(
        100
    )
    resent = []
    for row in stranded:
        # compare-and-set: of several workers sweeping at once, one resends each row
        if await DataExport.filter(id=row.id, sent_at=row.sent_at).update(sent_at=now):
            resent.append(build_message(str(row.id)))
    await send(resent)
    expired = await DataExport.filter(status=ExportStatus.READY, expires_at__lte=now).limit(100)
    for row in expired:
        await archives.remove(archive_name(row.id))
        await DataExport.filter(id=row.id, status=ExportStatus.READY).update(
            status=ExportStatus.EXPIRED, token_digest=None
        )
    return len(resent), len(expired)

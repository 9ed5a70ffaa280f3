"""Deleting an account whose grace period has passed: nothing of the user is left in any table or in media
storage, their partners are told, and the address may register again.

One transaction per account: it re-reads the request under the row lock (a sign-in may have cancelled it),
gathers what the rows it removes point at outside the database (media blobs, export archives) and who to
tell, then deletes the user row, which cascades to everything that is theirs (tasks with their instances,
proofs, reminders and events; partnerships on both sides; sessions and mailed tokens; webhooks and their
deliveries; exports). What names the user from rows that are not theirs is removed or cleared too: invites
others sent to the address, mail to it, their decisions on others' proofs (the reviewer is cleared by the
foreign key), and others' webhook bodies that carried the user's events. Files go after commit.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from models import (
    DataExport,
    OutgoingMail,
    Partnership,
    PartnershipStatus,
    User,
    Verification,
    WebhookDelivery,
)
from services.exports import archive_name
from services.kit import db_now, global_id, write_transaction
from services.mail import queue_mail
from services.mail.messages import partnership_ended_by_deletion
from services.media import remove_unreferenced
from storage import ArchiveStore, BlobStore

log = logging.getLogger("proofloop.deletion")

SWEEP_BATCH = 20


@dataclass(frozen=True)
class Deleted:
    blobs: list[str]
    archives: list[str]


async def delete_due_accounts(store: BlobStore, archives: ArchiveStore) -> int:
    """Delete every account whose deletion has come (a batch per call); how many."""
    now = await db_now()
    due = await User.filter(deletion_due_at__lte=now).order_by("deletion_due_at").limit(SWEEP_BATCH)
    deleted = 0
    for user in due:
        done = await _delete_account(str(user.id))
        if done is None:
            continue  # cancelled by a sign-in meanwhile, or deleted by another worker
        await remove_unreferenced(store, done.blobs)
        for archive in done.archives:
            await archives.remove(archive)
        deleted += 1
        log.info("deleted an account whose grace period had passed", extra={"user_id": str(user.id)})
    return deleted


async def _delete_account(user_id: str) -> Deleted | None:
    async with write_transaction():
        now = await db_now()
        user = await User.filter(id=user_id, deletion_due_at__lte=now).select_for_update().first()
        if user is None:
            return None
        digests = [
            digest
            for row in await Verification.filter(user_id=user.id).values_list(
                "media_digest", "thumbnail_digest"
            )
            for digest in row
            if digest is not None
        ]
        archives = [
            archive_name(i) for i in await DataExport.filter(user_id=user.id).values_list("id", flat=True)
        ]
        counterparts = await _counterparts(user)
        # rows of others that name the user: their invites to this address, mail to it, webhook bodies
        await Partnership.filter(invited_email=user.email, partner_id=None).delete()
        await OutgoingMail.filter(recipient=user.email).delete()
        await WebhookDelivery.filter(body__contains=f'"{global_id("User", user.id)}"').delete()
        name = user.display_name
        await user.delete()  # cascades to everything that is the user's
        for email in counterparts:
            await queue_mail(email, partnership_ended_by_deletion(name))
    return Deleted(digests, archives)


async def _counterparts(user: User) -> list[str]:
    """The addresses of the users on the other side of the user's live partnerships."""
    live = (PartnershipStatus.ACTIVE, PartnershipStatus.INVITED)
    watched = await Partnership.filter(partner_id=user.id, status__in=live).values_list(
        "user__email", flat=True
    )
    watching = await Partnership.filter(
        user_id=user.id, status=PartnershipStatus.ACTIVE, partner_id__not_isnull=True
    ).values_list("partner__email", flat=True)
    return sorted({str(e) for e in [*watched, *watching] if e})

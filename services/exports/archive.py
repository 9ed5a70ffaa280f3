"""What an export holds: every row of the user's, as JSON, and the media of their proofs, as one zip.

Rows are dumped field by field from the models, so a column added later is exported without an edit here;
what must never leave is named in `_SECRET` (hashes, digests, webhook secrets) and left out.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import Any
from uuid import UUID

from tortoise.models import Model

from models import (
    AuthToken,
    DataExport,
    Event,
    InstanceReminder,
    IntegrationEvent,
    Partnership,
    Task,
    TaskInstance,
    User,
    Verification,
    Webhook,
    WebhookDelivery,
)
from services.kit import format_instant
from services.media import MEDIA_EXTENSIONS
from storage import ArchiveStore, BlobStore

# never in an archive: what would let its reader sign in, sign webhook bodies or download again
_SECRET: dict[type[Model], frozenset[str]] = {
    User: frozenset({"password_hash"}),
    AuthToken: frozenset({"digest"}),
    Webhook: frozenset({"secret"}),
    Task: frozenset({"integration_key", "integration_secret"}),  # the endpoint and what signs its events
    WebhookDelivery: frozenset({"body", "link_no", "link_for", "linked_at", "put_offs"}),
    DataExport: frozenset({"token_digest"}),
}
# of someone else's proof the user decided as a partner: the decision, not the proof
_DECIDED_FIELDS = ("id", "instance_id", "user_id", "status", "reason", "decided_at", "review_comment")
ARCHIVE_NAME = "proofloop-export.json"


def _value(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_instant(value)
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Decimal):
        return float(value)
    return value


def row_dict(row: Model, only: tuple[str, ...] | None = None) -> dict[str, Any]:
    omitted = _SECRET.get(type(row), frozenset())
    names = only if only is not None else tuple(row._meta.fields_db_projection)
    return {name: _value(getattr(row, name)) for name in names if name not in omitted}


@dataclass
class Contents:
    document: dict[str, Any]
    media: list[tuple[str, str]] = field(default_factory=list)  # (name in the archive, blob digest)


async def gather(user: User) -> Contents:
    """Everything of `user`'s, read now."""
    tasks = await Task.filter(owner_id=user.id).order_by("created_at")
    task_ids = [t.id for t in tasks]
    instances = await TaskInstance.filter(task_id__in=task_ids).order_by("due_at")
    proofs = await Verification.filter(user_id=user.id).order_by("submitted_at")
    decided = await Verification.filter(reviewer_id=user.id).exclude(user_id=user.id).order_by("decided_at")
    hooks = await Webhook.filter(owner_id=user.id).order_by("created_at")
    document = {
        "format": "proofloop-export/1",
        "account": row_dict(user),
        "sessions": [row_dict(r) for r in await AuthToken.filter(user_id=user.id).order_by("created_at")],
        "tasks": [row_dict(r) for r in tasks],
        "instances": [row_dict(r) for r in instances],
        "reminders": [
            row_dict(r)
            for r in await InstanceReminder.filter(instance__task_id__in=task_ids).order_by("remind_at")
        ],
        "verifications": [row_dict(r) for r in proofs],
        "integrationEvents": [
            row_dict(r) for r in await IntegrationEvent.filter(task_id__in=task_ids).order_by("received_at")
        ],
        "reviewsDecided": [row_dict(r, _DECIDED_FIELDS) for r in decided],
        "events": [row_dict(r) for r in await Event.filter(user_id=user.id).order_by("id")],
        "partnerships": [
            row_dict(r)
            for r in await Partnership.filter(user_id=user.id).order_by("created_at")
            + await Partnership.filter(partner_id=user.id).order_by("created_at")
        ],
        "webhooks": [row_dict(r) for r in hooks],
        "webhookDeliveries": [
            row_dict(r)
            for r in await WebhookDelivery.filter(webhook_id__in=[h.id for h in hooks]).order_by("created_at")
        ],
        "exports": [row_dict(r) for r in await DataExport.filter(user_id=user.id).order_by("requested_at")],
    }
    contents = Contents(document)
    for proof in proofs:
        if proof.media_digest and proof.media_mime:
            extension = MEDIA_EXTENSIONS.get(proof.media_mime, "bin")
            contents.media.append((f"media/{proof.id}.{extension}", proof.media_digest))
        if proof.thumbnail_digest:
            contents.media.append((f"media/{proof.id}-thumbnail.jpg", proof.thumbnail_digest))
    return contents


async def write_archive(contents: Contents, media: BlobStore, archives: ArchiveStore, name: str) -> int:
    """The zip built as a file in the archive store's scratch directory, then kept under `name` (whole or
    not at all); its size. The zip is written in threads, one blob read from the media store (a file or
    an S3 object) at a time, so a large archive is never held in memory."""
    text = json.dumps(contents.document, indent=2, ensure_ascii=False)
    partial = await asyncio.to_thread(_PartialZip, archives.scratch)
    try:
        await asyncio.to_thread(partial.add, ARCHIVE_NAME, text.encode(), zipfile.ZIP_DEFLATED)
        for entry, digest in contents.media:
            try:
                blob = await media.read(digest)
            except FileNotFoundError:  # media already swept (its proof rolled back) has nothing to give
                continue
            await asyncio.to_thread(partial.add, entry, blob, zipfile.ZIP_STORED)
        size = await asyncio.to_thread(partial.finish)
    except BaseException:
        await asyncio.to_thread(partial.abandon)
        raise
    await archives.keep(name, partial.path)
    return size


class _PartialZip:
    """A zip written to a temp file in `directory`; `finish` closes it and says its size."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        fd, temp_name = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".zip")
        self.path = Path(temp_name)
        self.raw = os.fdopen(fd, "wb")
        self.zip = zipfile.ZipFile(self.raw, "w")

    def add(self, name: str, data: bytes, compression: int) -> None:
        self.zip.writestr(name, data, compress_type=compression)

    def finish(self) -> int:
        self.zip.close()
        self.raw.flush()
        os.fsync(self.raw.fileno())
        self.raw.close()
        return self.path.stat().st_size

    def abandon(self) -> None:
        self.zip.close()
        self.raw.close()
        self.path.unlink(missing_ok=True)

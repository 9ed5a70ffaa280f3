"""Where a proof's media bytes go: the per-user quota, and blobs that outlive only a committed row.

Blobs are content-addressed, so a digest may already belong to another row: a failed or refused proof
removes only the files it created itself, and only while no row refers to them. A proof that commits
then makes sure its files are there (a concurrent failure may have removed a shared one meanwhile).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from tortoise.expressions import Q
from tortoise.functions import Sum

from models import Verification
from services.errors import RateLimited
from storage.blobs import BlobStore


async def storage_used(user_id: str) -> int:
    """Bytes of media the user's proofs keep in the blob store."""
    rows = await Verification.filter(user_id=user_id).annotate(total=Sum("media_bytes")).values("total")
    total = rows[0]["total"] if rows else None
    return int(total or 0)


async def check_quota(user_id: str, adding: int, quota_bytes: int) -> None:
    """RATE_LIMITED when `adding` more bytes would take the user past their storage quota."""
    used = await storage_used(user_id)
    if used + adding > quota_bytes:
        raise RateLimited(
            f"storage quota reached: {used} of {quota_bytes} bytes used, this proof needs {adding} more"
        )


@dataclass
class StagedBlobs:
    """Blobs written for a proof whose row is not committed yet."""

    store: BlobStore
    contents: Sequence[bytes]
    digests: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)

    async def write(self) -> None:
        """Write every blob; if one fails, the ones already written by this call are removed again."""
        try:
            for data in self.contents:
                digest, new = await asyncio.to_thread(self.store.put_new, data)
                self.digests.append(digest)
                if new:
                    self.created.append(digest)
        except BaseException:
            await self.discard()
            raise

    async def discard(self) -> None:
        """Remove the blobs this staging created, unless a committed row refers to them."""
        if not self.created:
            return
        referenced = await Verification.filter(
            Q(media_digest__in=self.created) | Q(thumbnail_digest__in=self.created)
        ).values_list("media_digest", "thumbnail_digest")
        keep = {digest for row in referenced for digest in row}
        for digest in self.created:
            if digest not in keep:
                await asyncio.to_thread(self.store.remove, digest)
        self.created = []

    async def confirm(self) -> None:
        """After commit: rewrite any blob that a concurrent discard removed before our row was visible."""
        for data in self.contents:
            await asyncio.to_thread(self.store.put, data)

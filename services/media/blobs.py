"""Where a proof's media bytes go: the per-user quota, and blobs that outlive only a committed row.

Blobs are content-addressed, so a digest may already belong to another row: a failed or refused proof
removes only the files it created itself, and only while no row refers to them. A proof that commits
then makes sure its files are there (a concurrent failure may have removed a shared one meanwhile).
What a crash leaves between writing and committing, the API's periodic sweep removes; so does it what a
removal could not reach while the store was away (then only reported: the proof's outcome stands).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from tortoise.expressions import Q
from tortoise.functions import Sum

from models import Verification
from observability.outages import report_failure
from services.kit import RateLimited
from storage import BlobStore, Leftover, StoreUnavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MediaStorage:
    """Where proofs' media go, and how many bytes each user may keep there."""

    store: BlobStore
    quota_bytes: int


@dataclass(frozen=True)
class MediaCopy:
    """What an accepted proof keeps: the clean copy (no metadata) and its thumbnail."""

    clean: bytes
    thumbnail: bytes
    mime: str

    @property
    def stored_bytes(self) -> int:
        return len(self.clean) + len(self.thumbnail)


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


async def _referenced(digests: list[str]) -> set[str]:
    if not digests:
        return set()
    rows = await Verification.filter(
        Q(media_digest__in=digests) | Q(thumbnail_digest__in=digests)
    ).values_list("media_digest", "thumbnail_digest")
    return {digest for row in rows for digest in row if digest is not None}


async def remove_unreferenced(store: BlobStore, digests: list[str]) -> int:
    """Remove the blobs among `digests` that no proof refers to any more (a deleted account's); how many."""
    keep = await _referenced(digests)
    removed = 0
    for digest in sorted(set(digests) - keep):
        if await store.exists(digest):
            await store.remove(digest)
            removed += 1
    return removed


async def sweep_orphans(store: BlobStore, older_than_seconds: float, batch: int = 500) -> int:
    """Remove blobs no row refers to, last written over `older_than_seconds` ago: what a crash between
    writing a proof's blobs and committing its row (or mid-write) left behind. Returns how many."""
    cutoff = time.time() - older_than_seconds
    removed = 0
    chunk: list[Leftover] = []
    async for leftover in store.older_than(cutoff):
        chunk.append(leftover)
        if len(chunk) >= batch:
            removed += await _remove_orphans(store, chunk)
            chunk = []
    return removed + await _remove_orphans(store, chunk)


async def _remove_orphans(store: BlobStore, found: list[Leftover]) -> int:
    keep = await _referenced([leftover.digest for leftover in found if leftover.digest is not None])
    orphans = [leftover for leftover in found if leftover.digest not in keep]
    for leftover in orphans:
        await store.remove_leftover(leftover.name)
    return len(orphans)


async def sweep_orphans_forever(store: BlobStore, every_seconds: float, older_than_seconds: float) -> None:
    """The API's periodic sweep (every replica runs one; removing a file twice is harmless)."""
    while True:
        await asyncio.sleep(every_seconds)
        try:
            removed = await sweep_orphans(store, older_than_seconds)
        except Exception as exc:  # a failed sweep is retried on the next round
            report_failure(log, "media sweep", exc, "media sweep failed")
            continue
        if removed:
            log.info("media sweep removed %d orphaned files", removed)


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
                digest, new = await self.store.put(data)
                self.digests.append(digest)
                if new:
                    self.created.append(digest)
        except BaseException:
            await self.discard()
            raise

    async def discard(self) -> None:
        """Remove the blobs this staging created, unless a committed row refers to them; a store that does
        not answer leaves them to the sweep."""
        if not self.created:
            return
        keep = await _referenced(self.created)
        try:
            for digest in self.created:
                if digest not in keep:
                    await self.store.remove(digest)
        except StoreUnavailable as exc:
            report_failure(log, "media removal", exc, "removing a refused proof's media failed")
        self.created = []

    async def confirm(self) -> None:
        """After commit: rewrite any blob that a concurrent discard removed before our row was visible."""
        try:
            for digest, data in zip(self.digests, self.contents, strict=True):
                if not await self.store.exists(digest):  # a HEAD, not a second upload of the bytes
                    await self.store.put(data)
        except StoreUnavailable as exc:  # the row has committed: its outcome stands
            report_failure(log, "media confirm", exc, "rewriting a proof's media failed")

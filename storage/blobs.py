"""What every media store is: content-addressed blobs (`ab/cd/<sha256>`), written whole or not at all.

Two backends implement `BlobStore`: files under a directory (storage/files.py, the embedded default) and
an S3-compatible bucket (storage/s3.py); storage/open.py picks one from PROOFLOOP_MEDIA_STORE_URL. Every
method is a coroutine: the filesystem's blocking calls run in threads, S3's requests on obstore's own
runtime, so neither holds the event loop.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

__all__ = ["BlobBody", "BlobStore", "Leftover", "StoreUnavailable", "Stored", "blob_key", "digest_of"]

DIGEST = re.compile(r"[0-9a-f]{64}")


class StoreUnavailable(Exception):
    """The store did not answer within its bound (a timeout, a refused or dropped connection, a server
    error after retries): the operation may or may not have happened, and may be retried."""


class Stored(NamedTuple):
    digest: str
    created: bool  # False: the blob was already there (content addressing makes a put idempotent)


@dataclass(frozen=True)
class Leftover:
    """A stored object last written before a sweep's cutoff: its name in the store, and its digest (None:
    something that is not a blob, such as a temp file a crash left mid-write)."""

    name: str
    digest: str | None


@dataclass(frozen=True)
class BlobBody:
    """A blob ready to be served: its size and its bytes in chunks; `path` when it is a file on this host
    (then served as a file: ranges, sendfile)."""

    size: int
    chunks: AsyncIterator[bytes]
    path: Path | None = None


class BlobStore(Protocol):
    async def put(self, data: bytes) -> Stored:
        """Store `data` whole (a reader never sees part of it); idempotent."""
        ...

    async def exists(self, digest: str) -> bool: ...

    async def read(self, digest: str) -> bytes:
        """The blob's bytes; FileNotFoundError when it is not there."""
        ...

    async def open(self, digest: str) -> BlobBody | None:
        """The blob to stream; None when it is not there."""
        ...

    async def remove(self, digest: str) -> None:
        """Delete a blob; nothing happens when it is not there."""
        ...

    def older_than(self, cutoff: float) -> AsyncIterator[Leftover]:
        """Every object last written before `cutoff` (seconds since the epoch), for the orphan sweep."""
        ...

    async def remove_leftover(self, name: str) -> None:
        """Delete an object `older_than` listed; nothing happens when it is gone already."""
        ...


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def blob_key(digest: str) -> str:
    """A blob's name inside a store; refuses anything but 64 lowercase hex characters (no path tricks)."""
    if not DIGEST.fullmatch(digest):
        raise ValueError("a blob digest is 64 lowercase hex characters")
    return f"{digest[:2]}/{digest[2:4]}/{digest}"


def digest_in(name: str) -> str | None:
    """The digest a blob's name ends in, when the name is a blob's (`ab/cd/<digest>`)."""
    digest = name.rsplit("/", 1)[-1]
    return digest if DIGEST.fullmatch(digest) and name.endswith(blob_key(digest)) else None

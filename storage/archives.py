"""Where data-export archives live: files in a directory (the embedded default), or objects under
`<prefix>/exports/` in the media store's S3 bucket, so a worker on one host builds an archive and an API
process on another serves it.

An archive is built as a local file first (a zip of a user's media can be large: it is never held in
memory), then kept: renamed into the directory, or uploaded (multipart above 5 MB; an S3 object appears
whole when its upload completes, or not at all). Names are `<uuid>.zip`, nothing else.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol, TypeVar

from obstore.store import S3Store

from storage.blobs import BlobBody
from storage.files import file_body
from storage.s3 import CHUNK_BYTES, answered_within, chunks_of

__all__ = ["ARCHIVE_NAME", "ArchiveStore", "FileArchiveStore", "S3ArchiveStore"]

T = TypeVar("T")
ARCHIVE_NAME = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.zip")
S3_FOLDER = "exports"


def _checked(name: str) -> str:
    if not ARCHIVE_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not an archive name")
    return name


class ArchiveStore(Protocol):
    @property
    def scratch(self) -> Path:
        """A local directory where archives are built before they are kept."""
        ...

    async def keep(self, name: str, built: Path) -> None:
        """Make the finished file `built` (under `scratch`) the archive `name`, whole or not at all; the
        local file is gone afterwards either way."""
        ...

    async def open(self, name: str) -> BlobBody | None:
        """The archive ready to be served; None when there is none of that name."""
        ...

    async def remove(self, name: str) -> None:
        """Remove the archive; one already gone is no error."""
        ...


class FileArchiveStore:
    """Archives as files `root/<uuid>.zip`, built in the same directory and renamed into place."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def scratch(self) -> Path:
        return self.root

    async def keep(self, name: str, built: Path) -> None:
        await asyncio.to_thread(os.replace, built, self.root / _checked(name))

    async def open(self, name: str) -> BlobBody | None:
        return await file_body(self.root / _checked(name))

    async def remove(self, name: str) -> None:
        await asyncio.to_thread((self.root / _checked(name)).unlink, missing_ok=True)


class S3ArchiveStore:
    """Archives as objects `<prefix>/exports/<uuid>.zip`. `store` answers the short requests within
    `timeout`; `bodies` carries uploads and served bodies, which take as long as their size needs."""

    def __init__(
        self,
        store: S3Store,
        bodies: S3Store,
        scratch: Path,
        *,
        timeout: float,
        body_seconds: float,
        on_answer: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.bodies = bodies
        self._scratch = scratch
        self.timeout = timeout
        self.body_seconds = body_seconds
        self.on_answer = on_answer

    @property
    def scratch(self) -> Path:
        return self._scratch

    @staticmethod
    def key(name: str) -> str:
        return f"{S3_FOLDER}/{_checked(name)}"

    async def _bounded(self, operation: str, call: Awaitable[T], seconds: float) -> T:
        return await answered_within(seconds, operation, call, self.on_answer)

    async def keep(self, name: str, built: Path) -> None:
        key = self.key(name)
        try:
            await self._bounded("put", self.bodies.put_async(key, built, mode="overwrite"), self.body_seconds)
        finally:
            await asyncio.to_thread(built.unlink, missing_ok=True)

    async def open(self, name: str) -> BlobBody | None:
        try:
            result = await self._bounded("get", self.bodies.get_async(self.key(name)), self.timeout)
        except FileNotFoundError:
            return None
        return BlobBody(result.meta["size"], chunks_of(result.stream(min_chunk_size=CHUNK_BYTES)))

    async def remove(self, name: str) -> None:
        # S3 answers a delete of a missing key with success
        await self._bounded("delete", self.store.delete_async(self.key(name)), self.timeout)

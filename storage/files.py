"""The filesystem backend: content-addressed files root/ab/cd/<sha256>, written beside their place and
renamed (atomic), so a reader never sees half of one. The embedded default, and any directory that every
API and worker mounts."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from storage.blobs import BlobBody, Leftover, Stored, blob_key, digest_in, digest_of

__all__ = ["FileBlobStore", "file_body"]

CHUNK_BYTES = 64 * 1024


class FileBlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, digest: str) -> Path:
        """Where a blob's file lives; ValueError for anything but a digest."""
        return self.root / blob_key(digest)

    async def put(self, data: bytes) -> Stored:
        return await asyncio.to_thread(self._put, data)

    def _put(self, data: bytes) -> Stored:
        digest = digest_of(data)
        target = self.path(digest)
        if target.is_file():
            return Stored(digest, False)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Write beside the target then rename: readers never see a half-written blob.
        fd, temp_name = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as temp:
                temp.write(data)
                temp.flush()
                os.fsync(temp.fileno())
            os.replace(temp_name, target)
        except BaseException:
            Path(temp_name).unlink(missing_ok=True)
            raise
        return Stored(digest, True)

    async def exists(self, digest: str) -> bool:
        return await asyncio.to_thread(self.path(digest).is_file)

    async def read(self, digest: str) -> bytes:
        return await asyncio.to_thread(self.path(digest).read_bytes)

    async def open(self, digest: str) -> BlobBody | None:
        return await file_body(self.path(digest))

    async def remove(self, digest: str) -> None:
        await asyncio.to_thread(self.path(digest).unlink, missing_ok=True)

    async def older_than(self, cutoff: float) -> AsyncIterator[Leftover]:
        for leftover in await asyncio.to_thread(self._older_than, cutoff):
            yield leftover

    def _older_than(self, cutoff: float) -> list[Leftover]:
        if not self.root.is_dir():
            return []
        found = []
        for path in self.root.glob("*/*/*"):
            try:
                if not path.is_file() or path.stat().st_mtime >= cutoff:
                    continue
            except FileNotFoundError:  # removed meanwhile
                continue
            name = path.relative_to(self.root).as_posix()
            found.append(Leftover(name, digest_in(name)))
        return found

    async def remove_leftover(self, name: str) -> None:
        parts = name.split("/")
        if len(parts) != 3 or any(part in ("", ".", "..") for part in parts):  # what older_than lists
            raise ValueError(f"{name!r} is not an object of this store")
        await asyncio.to_thread((self.root / name).unlink, missing_ok=True)


async def file_body(path: Path) -> BlobBody | None:
    """The file ready to be served (its size, its chunks, its path); None when there is none."""
    try:
        size = (await asyncio.to_thread(path.stat)).st_size
    except FileNotFoundError:
        return None
    return BlobBody(size, _chunks(path), path)


async def _chunks(path: Path) -> AsyncIterator[bytes]:
    with await asyncio.to_thread(path.open, "rb") as file:
        while chunk := await asyncio.to_thread(file.read, CHUNK_BYTES):
            yield chunk

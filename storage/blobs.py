from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["BlobStore"]

_DIGEST = re.compile(r"[0-9a-f]{64}")


class BlobStore:
    """Content-addressed files: root/ab/cd/<sha256>. Writes are atomic and idempotent."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, data: bytes) -> str:
        """Store `data` and return its sha256 hex digest."""
        return self.put_new(data)[0]

    def put_new(self, data: bytes) -> tuple[str, bool]:
        """Store `data`: its sha256 hex digest, and whether this call created the file (else it was there)."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if target.is_file():
            return digest, False
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
        return digest, True

    def files_older_than(self, cutoff: float) -> Iterator[tuple[Path, str | None]]:
        """Files last written before `cutoff` (time.time()): path, and digest (None: a temp file)."""
        if not self.root.is_dir():
            return
        for path in self.root.glob("*/*/*"):
            try:
                if not path.is_file() or path.stat().st_mtime >= cutoff:
                    continue
            except FileNotFoundError:  # removed meanwhile
                continue
            yield path, path.name if _DIGEST.fullmatch(path.name) else None

    def remove(self, digest: str) -> None:
        """Delete a blob; nothing happens when it is not there."""
        self.path(digest).unlink(missing_ok=True)

    def path(self, digest: str) -> Path:
        """Where a blob lives; refuses anything but 64 lowercase hex characters (no path tricks)."""
        if not _DIGEST.fullmatch(digest):
            raise ValueError("a blob digest is 64 lowercase hex characters")
        return self.root / digest[:2] / digest[2:4] / digest

    def read(self, digest: str) -> bytes:
        """The blob's bytes; FileNotFoundError when it was never stored."""
        return self.path(digest).read_bytes()

    def exists(self, digest: str) -> bool:
        return self.path(digest).is_file()

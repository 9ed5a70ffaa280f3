"""PROOFLOOP_MEDIA_STORE_URL turned into stores: unset, files under the data dir; `file:///srv/media`, files
under that directory; `s3://bucket/prefix?endpoint=…&region=…`, objects in an S3-compatible bucket. The
data exports' archives follow it into the bucket (storage/archives.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from obstore.store import S3Store

from storage.archives import ArchiveStore, FileArchiveStore, S3ArchiveStore
from storage.blobs import BlobStore
from storage.files import FileBlobStore
from storage.s3 import BODY_SECONDS, S3BlobStore, s3_store

__all__ = ["open_archive_store", "open_blob_store"]

S3_PARAMETERS = frozenset({"endpoint", "region"})


@dataclass(frozen=True)
class _Bucket:
    name: str
    prefix: str
    endpoint: str | None
    region: str | None

    def client(self, timeout: float, body_seconds: float | None = None) -> S3Store:
        return s3_store(
            self.name,
            self.prefix,
            endpoint=self.endpoint,
            region=self.region,
            timeout=timeout,
            body_seconds=body_seconds,
        )


def _parse(url: str) -> Path | _Bucket:
    """A file store's directory or an S3 store's bucket; ValueError, saying what is wrong."""
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            "the media store URL carries no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    if parts.scheme == "file":
        if parts.netloc or parts.query or not parts.path.startswith("/"):
            raise ValueError("a file media store URL is file:///absolute/directory")
        return Path(unquote(parts.path))
    if parts.scheme != "s3":
        raise ValueError(
            f"the media store URL is s3://bucket/prefix or file:///directory, not {parts.scheme}:"
        )
    if not parts.netloc:
        raise ValueError("the media store URL names no bucket: s3://bucket/prefix")
    query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    unknown = set(query) - S3_PARAMETERS
    if unknown or any(len(values) != 1 or not values[0] for values in query.values()):
        raise ValueError(
            f"the media store URL takes {', '.join(sorted(S3_PARAMETERS))}, each once, with a value"
        )
    endpoint, region = (query[name][0] if name in query else None for name in ("endpoint", "region"))
    if endpoint is not None and urlsplit(endpoint).scheme not in ("http", "https"):
        raise ValueError("the media store's endpoint is an http:// or https:// address")
    return _Bucket(parts.netloc, parts.path.strip("/"), endpoint, region)


def open_blob_store(
    url: str | None, default_dir: Path, *, timeout: float, on_answer: Callable[[], None] = lambda: None
) -> BlobStore:
    """The media store `url` names; ValueError, saying what is wrong, for one it cannot be."""
    where = _parse(url) if url else default_dir
    if isinstance(where, Path):
        return FileBlobStore(where)
    return S3BlobStore(where.client(timeout), timeout, on_answer, where.client(timeout, BODY_SECONDS))


def open_archive_store(
    url: str | None, exports_dir: Path, *, timeout: float, on_answer: Callable[[], None] = lambda: None
) -> ArchiveStore:
    """Where data exports are kept: in the media store's bucket when `url` names one (every host reaches
    it), else files in `exports_dir` (a directory store's media are shared by mounting; exports stay
    in the data dir, where they always were)."""
    where = _parse(url) if url else exports_dir
    if isinstance(where, Path):
        return FileArchiveStore(exports_dir)
    return S3ArchiveStore(
        where.client(timeout),
        where.client(timeout, BODY_SECONDS),
        exports_dir,
        timeout=timeout,
        body_seconds=BODY_SECONDS,
        on_answer=on_answer,
    )

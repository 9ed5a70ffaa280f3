"""PROOFLOOP_MEDIA_STORE_URL turned into a store: unset, files under the data dir; `file:///srv/media`, files
under that directory; `s3://bucket/prefix?endpoint=…&region=…`, objects in an S3-compatible bucket."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from storage.blobs import BlobStore
from storage.files import FileBlobStore
from storage.s3 import BODY_SECONDS, S3BlobStore, s3_store

__all__ = ["open_blob_store"]

S3_PARAMETERS = frozenset({"endpoint", "region"})


def open_blob_store(
    url: str | None, default_dir: Path, *, timeout: float, on_answer: Callable[[], None] = lambda: None
) -> BlobStore:
    """The media store `url` names; ValueError, saying what is wrong, for one it cannot be."""
    if not url:
        return FileBlobStore(default_dir)
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            "the media store URL carries no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    if parts.scheme == "file":
        if parts.netloc or parts.query or not parts.path.startswith("/"):
            raise ValueError("a file media store URL is file:///absolute/directory")
        return FileBlobStore(Path(unquote(parts.path)))
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
    bucket, prefix = parts.netloc, parts.path.strip("/")
    store = s3_store(bucket, prefix, endpoint=endpoint, region=region, timeout=timeout)
    bodies = s3_store(
        bucket, prefix, endpoint=endpoint, region=region, timeout=timeout, body_seconds=BODY_SECONDS
    )
    return S3BlobStore(store, timeout, on_answer, bodies)

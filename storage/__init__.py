"""Media blob stores: one interface (blobs.py), files under a directory (files.py), an S3 bucket (s3.py)."""

from __future__ import annotations

from storage.blobs import BlobBody, BlobStore, Leftover, Stored, StoreUnavailable, blob_key, digest_of
from storage.files import FileBlobStore
from storage.open import open_blob_store
from storage.s3 import S3BlobStore

__all__ = [
    "BlobBody",
    "BlobStore",
    "FileBlobStore",
    "Leftover",
    "S3BlobStore",
    "StoreUnavailable",
    "Stored",
    "blob_key",
    "digest_of",
    "open_blob_store",
]

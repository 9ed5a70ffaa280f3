"""Media blob stores: one interface (blobs.py), files under a directory (files.py), an S3 bucket (s3.py);
and where data-export archives are kept (archives.py)."""

from __future__ import annotations

from storage.archives import ArchiveStore, FileArchiveStore, S3ArchiveStore
from storage.blobs import BlobBody, BlobStore, Leftover, Stored, StoreUnavailable, blob_key, digest_of
from storage.files import FileBlobStore
from storage.open import open_archive_store, open_blob_store
from storage.s3 import S3BlobStore

__all__ = [
    "ArchiveStore",
    "BlobBody",
    "BlobStore",
    "FileArchiveStore",
    "FileBlobStore",
    "Leftover",
    "S3ArchiveStore",
    "S3BlobStore",
    "StoreUnavailable",
    "Stored",
    "blob_key",
    "digest_of",
    "open_archive_store",
    "open_blob_store",
]

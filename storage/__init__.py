from __future__ import annotations

from storage.blobs import BlobStore

__all__ = ["BlobStore"]

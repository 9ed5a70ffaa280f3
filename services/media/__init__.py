"""The media proofs keep: where their bytes go (the per-user quota, blobs that outlive only a committed row,
the sweep of what a crash left), which blobs no proof references any more, and the signed links that
reach them. Below proofs, exports and deletion, which all handle these blobs, and free of the decoders:
a process that only stores, copies or removes media never loads them."""

from __future__ import annotations

from services.media.blobs import (
    MediaCopy,
    MediaStorage,
    StagedBlobs,
    check_quota,
    remove_unreferenced,
    sweep_orphans_forever,
)
from services.media.links import EXPORT_LINK, MEDIA_EXTENSIONS, LinkSigner, export_path, media_path

__all__ = [
    "EXPORT_LINK",
    "MEDIA_EXTENSIONS",
    "LinkSigner",
    "MediaCopy",
    "MediaStorage",
    "StagedBlobs",
    "check_quota",
    "export_path",
    "media_path",
    "remove_unreferenced",
    "sweep_orphans_forever",
]

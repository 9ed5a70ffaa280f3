"""Data exports: an archive of everything of a user's, built by a worker and mailed as an expiring link."""

from __future__ import annotations

from services.exports.exports import (
    BUILD_ACTOR,
    ExportRules,
    archive_name,
    build_export,
    downloadable,
    downloadable_by_owner,
    exports_of,
    request_export,
    sweep_exports,
)

__all__ = [
    "BUILD_ACTOR",
    "ExportRules",
    "archive_name",
    "build_export",
    "downloadable",
    "downloadable_by_owner",
    "exports_of",
    "request_export",
    "sweep_exports",
]

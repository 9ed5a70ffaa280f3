from __future__ import annotations

from datetime import datetime

import strawberry

from models import DataExport as DataExportRow
from models import ExportStatus
from schema.context import Info
from schema.deprecations import replaced_by
from schema.links import absolute_url, link_signer
from schema.scalars import SafeInt
from services.kit import global_id
from services.media import EXPORT_LINK, export_path

strawberry.enum(ExportStatus, name="DataExportStatus")


@strawberry.type(description="an archive of everything of yours; its download link is mailed to you")
class DataExport:
    row: strawberry.Private[DataExportRow]

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(global_id("DataExport", self.row.id))

    @strawberry.field(description="PENDING while a worker builds it, READY once its link is mailed")
    def status(self) -> ExportStatus:
        return self.row.status

    @strawberry.field
    def requested_at(self) -> datetime:
        return self.row.requested_at

    @strawberry.field
    def ready_at(self) -> datetime | None:
        return self.row.ready_at

    @strawberry.field(description="the mailed link works until then; the archive is removed after")
    def expires_at(self) -> datetime | None:
        return self.row.expires_at

    @strawberry.field(deprecation_reason=replaced_by("byteSize", "an integer"))
    def size_bytes(self) -> float | None:  # a GraphQL Int is 32-bit: an archive may be larger
        return float(self.row.size_bytes) if self.row.size_bytes is not None else None

    @strawberry.field(
        description="READY and not expired: a signed link to the archive, for you alone (the same URL for"
        " PROOFLOOP_MEDIA_LINK_PERIOD_SECONDS, dead once your session ends); the mailed link works too"
    )
    async def download_url(self, info: Info) -> str | None:
        if self.row.status is not ExportStatus.READY or self.row.expires_at is None:
            return None
        if self.row.expires_at <= await info.context.now():
            return None
        session = await info.context.authenticate()  # exports are listed to their owner only
        subject = str(self.row.id)
        signer = link_signer(info.context.settings)
        return absolute_url(
            info,
            signer.link(export_path(subject), subject, str(session.user.id), EXPORT_LINK, session.token_id),
        )

    @strawberry.field(description="the archive's size in bytes, once READY")
    def byte_size(self) -> SafeInt | None:
        return SafeInt(self.row.size_bytes) if self.row.size_bytes is not None else None

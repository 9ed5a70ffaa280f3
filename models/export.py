"""A user's request for an archive of everything of theirs, and the archive's expiring download link."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.enums import ExportStatus
from models.user import User


class DataExport(Model):
    id = fields.UUIDField(primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="exports", on_delete=fields.CASCADE
    )
    status = fields.CharEnumField(ExportStatus, max_length=16, default=ExportStatus.PENDING)
    requested_at = fields.DatetimeField(auto_now_add=True)
    # when the build message was last sent: the sweep resends one that never led to a build
    sent_at = fields.DatetimeField(null=True)
    ready_at = fields.DatetimeField(null=True)
    expires_at = fields.DatetimeField(null=True)
    size_bytes = fields.BigIntField(null=True)
    # sha256 of the mailed link's token: a leaked table grants no download
    token_digest = fields.CharField(max_length=64, null=True)

    user_id: str

    class Meta:
        table = "data_exports"

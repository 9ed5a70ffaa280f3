"""An accountability partnership: `partner` watches and reviews `user`."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from models.enums import PartnershipStatus
from models.user import User


class Partnership(Model):
    id = fields.UUIDField(primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="partnerships_as_user", on_delete=fields.CASCADE
    )
    partner: fields.ForeignKeyNullableRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="partnerships_as_partner", null=True, on_delete=fields.CASCADE
    )
    invited_email = fields.CharField(max_length=254)  # lower-cased; matched at login-free accept time
    status = fields.CharEnumField(PartnershipStatus, max_length=16, default=PartnershipStatus.INVITED)
    created_at = fields.DatetimeField(auto_now_add=True)
    responded_at = fields.DatetimeField(null=True)
    # the owner's commitment horizon holds partner changes back (services/partners/access.py reads both)
    removal_effective_at = fields.DatetimeField(null=True)  # removed by the owner: watches until then
    decides_from = fields.DatetimeField(null=True)  # accepted beside another partner: decides from then

    user_id: str
    partner_id: str | None

    class Meta:
        table = "partnerships"
        indexes = (("partner_id", "status"), ("invited_email", "status"), ("user_id", "status"))

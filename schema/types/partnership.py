from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum

import strawberry

from models import Partnership as PartnershipRow
from schema.context import Info
from schema.enums import PartnershipStatus
from schema.types.node import Node
from schema.types.user import User, load_user
from services.kit import global_id
from services.partners import status_at as partnership_status


@strawberry.enum(description="which side of a partnership you are on")
class PartnershipRole(Enum):
    OWNER = "OWNER"  # you are held accountable: you sent the invite
    PARTNER = "PARTNER"  # you watch and review: the invite came to you


@strawberry.type
class Partnership(Node):
    row: strawberry.Private[PartnershipRow]

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(global_id("Partnership", self.row.id))

    @strawberry.field(description="the one being held accountable")
    async def user(self, info: Info) -> User:
        return await load_user(info, self.row.user_id)

    @strawberry.field(description="the one who watches and reviews; null until the invite is accepted")
    async def partner(self, info: Info) -> User | None:
        if self.row.partner_id is None or self.row.status.value == "INVITED":
            return None
        return await load_user(info, self.row.partner_id)

    @strawberry.field(description="the address the invite went to; seen by the inviter only")
    async def invited_email(self, info: Info) -> str | None:
        viewer = await info.context.viewer()
        return self.row.invited_email if viewer.id == self.row.user_id else None

    @strawberry.field(
        description="OWNER: you are held accountable (you sent the invite); PARTNER: you watch and review"
        " (the invite came to you)"
    )
    async def viewer_role(self, info: Info) -> PartnershipRole:
        viewer = await info.context.viewer()
        return PartnershipRole.OWNER if str(viewer.id) == str(self.row.user_id) else PartnershipRole.PARTNER

    @strawberry.field
    def status(self) -> PartnershipStatus:
        return partnership_status(self.row, datetime.now(UTC))

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at

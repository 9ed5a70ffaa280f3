from __future__ import annotations

from datetime import datetime

import strawberry

from models import AuthToken
from schema.types.node import Node
from services.kit import global_id


@strawberry.type(description="a signed-in device: one bearer token (never shown again after sign-in)")
class Session(Node):
    row: strawberry.Private[AuthToken]
    current_id: strawberry.Private[str]

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(global_id("Session", self.row.id))

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field(description="sliding: every use extends it")
    def expires_at(self) -> datetime:
        return self.row.expires_at

    @strawberry.field(description="the token that made this request")
    def current(self) -> bool:
        return str(self.row.id) == self.current_id

    @strawberry.field(description="as given at sign-in (`deviceName` of login or register)")
    def device_name(self) -> str | None:
        return self.row.device_name

    @strawberry.field(description="the User-Agent of the sign-in request")
    def user_agent(self) -> str | None:
        return self.row.user_agent

    @strawberry.field(description="to the minute: the token's last request (its sign-in before any)")
    def last_used_at(self) -> datetime:
        return self.row.last_used_at or self.row.created_at

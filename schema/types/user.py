from __future__ import annotations

import strawberry

from models import User as UserRow
from schema.context import Info


@strawberry.type
class User:
    row: strawberry.Private[UserRow]

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(str(self.row.id))

    @strawberry.field
    def display_name(self) -> str:
        return self.row.display_name

    @strawberry.field
    def timezone(self) -> str:
        return self.row.timezone

    @strawberry.field(description="only on yourself")
    async def email(self, info: Info) -> str | None:
        viewer = await info.context.viewer()
        return self.row.email if viewer.id == self.row.id else None


@strawberry.type
class AuthPayload:
    token: str
    user: User


async def load_user(info: Info, user_id: object) -> User:
    row = await info.context.loaders.user.load(str(user_id))
    if row is None:
        raise LookupError(f"user {user_id} vanished")
    return User(row=row)

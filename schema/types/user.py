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

    @strawberry.field(description="only on yourself: empty for anyone else (a task has its own timezone)")
    async def timezone(self, info: Info) -> str:
        return self.row.timezone if await self._is_self(info) else ""

    async def _is_self(self, info: Info) -> bool:
        # another user (a partner, a co-partner through `reviewer`) shows an id and a display name only
        session = await info.context.session_or_none()
        return session is not None and str(session.user.id) == str(self.row.id)

    @strawberry.field(description="only on yourself")
    async def email(self, info: Info) -> str | None:
        return self.row.email if await self._is_self(info) else None

    @strawberry.field(description="only on yourself")
    async def email_verified(self, info: Info) -> bool | None:
        return self.row.email_verified_at is not None if await self._is_self(info) else None


@strawberry.type
class AuthPayload:
    token: str
    user: User


async def load_user(info: Info, user_id: object) -> User:
    row = await info.context.loaders.user.load(str(user_id))
    if row is None:
        raise LookupError(f"user {user_id} vanished")
    return User(row=row)

from __future__ import annotations

from datetime import datetime

import strawberry

from models import User as UserRow
from rules.quiet_hours import clock_of
from schema.context import Info
from schema.deprecations import replaced_by
from schema.types.node import Node
from services.accounts import horizon_days
from services.kit import global_id


@strawberry.type(description="how long an easier edit of your tasks waits before it applies")
class CommitmentHorizon:
    days: int = strawberry.field(description="in force now; 0: edits apply at once")
    lowering_to: int | None = strawberry.field(description="a lowered value, in force from loweringAt")
    lowering_at: datetime | None


@strawberry.type(description="when no webhook notification is sent, on your wall clock (your timezone)")
class QuietHours:
    start: str = strawberry.field(description='"HH:MM"')
    end: str = strawberry.field(description='"HH:MM"; what falls in the span is sent then')


@strawberry.type
class User(Node):
    row: strawberry.Private[UserRow]
    # verifyEmail's answer: the token mailed to the address shows it verified, signed in or not
    mailbox_proven: strawberry.Private[bool] = False

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(global_id("User", self.row.id))

    @strawberry.field
    def display_name(self) -> str:
        return self.row.display_name

    @strawberry.field(
        description="only on yourself: empty for anyone else (a task has its own timezone)",
        deprecation_reason=replaced_by("profileTimezone", "null, not an empty string, for anyone else"),
    )
    async def timezone(self, info: Info) -> str:
        return await self.profile_timezone(info) or ""

    @strawberry.field(
        description="your profile's IANA zone (where a new task's schedule is read when it names none); "
        "null for anyone else (each task says its own: Schedule.timezone)"
    )
    async def profile_timezone(self, info: Info) -> str | None:
        return self.row.timezone if await self._is_self(info) else None

    async def _is_self(self, info: Info) -> bool:
        # another user (a partner, a co-partner through `reviewer`) shows an id and a display name only
        session = await info.context.session_or_none()
        return session is not None and str(session.user.id) == str(self.row.id)

    @strawberry.field(description="only on yourself")
    async def email(self, info: Info) -> str | None:
        return self.row.email if await self._is_self(info) else None

    @strawberry.field(
        description="only on yourself: when your account is deleted, as requestAccountDeletion asked;"
        " signing in before then cancels it"
    )
    async def deletion_due_at(self, info: Info) -> datetime | None:
        return self.row.deletion_due_at if await self._is_self(info) else None

    @strawberry.field(description="only on yourself; null when you have none")
    async def quiet_hours(self, info: Info) -> QuietHours | None:
        start, end = self.row.quiet_start_minute, self.row.quiet_end_minute
        if start is None or end is None or not await self._is_self(info):
            return None
        return QuietHours(start=clock_of(start), end=clock_of(end))

    @strawberry.field(description="only on yourself")
    async def commitment_horizon(self, info: Info) -> CommitmentHorizon | None:
        if not await self._is_self(info):
            return None
        row, now = self.row, await info.context.now()
        days = horizon_days(row, now)
        lowering = row.lowered_horizon_at is not None and row.lowered_horizon_at > now
        return CommitmentHorizon(
            days=days,
            lowering_to=row.lowered_horizon_days if lowering else None,
            lowering_at=row.lowered_horizon_at if lowering else None,
        )

    @strawberry.field(description="only on yourself")
    async def email_verified(self, info: Info) -> bool | None:
        if self.mailbox_proven or await self._is_self(info):
            return self.row.email_verified_at is not None
        return None


@strawberry.type
class AuthPayload:
    token: str
    user: User


async def load_user(info: Info, user_id: object) -> User:
    row = await info.context.loaders.user.load(str(user_id))
    if row is None:
        raise LookupError(f"user {user_id} vanished")
    return User(row=row)

from __future__ import annotations

import strawberry

from realtime import notices
from resolvers.permissions import IsAuthenticated, Public
from schema.context import Info
from schema.types.user import AuthPayload, User
from services import accounts
from services.rate_limits import FailureLimit


@strawberry.type
class AccountQueries:
    @strawberry.field(permission_classes=[IsAuthenticated])
    async def me(self, info: Info) -> User:
        return User(row=await info.context.viewer())


@strawberry.type
class AccountMutations:
    @strawberry.mutation(permission_classes=[Public])
    async def register(
        self, info: Info, email: str, password: str, display_name: str, timezone: str | None = "UTC"
    ) -> AuthPayload:
        settings = info.context.settings
        session, token = await accounts.register(
            email,
            password,
            display_name,
            timezone or "UTC",
            min_password_length=settings.password_min_length,
            token_ttl_seconds=settings.token_ttl_seconds,
        )
        info.context.session = session  # the rest of this request speaks for the new account
        return AuthPayload(token=token, user=User(row=session.user))

    @strawberry.mutation(permission_classes=[Public])
    async def login(self, info: Info, email: str, password: str) -> AuthPayload:
        settings = info.context.settings
        session, token = await accounts.login(
            email,
            password,
            token_ttl_seconds=settings.token_ttl_seconds,
            failures=FailureLimit("login", settings.login_attempts, settings.login_window_seconds),
        )
        info.context.session = session
        return AuthPayload(token=token, user=User(row=session.user))

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], description="revokes the token that made this request"
    )
    async def logout(self, info: Info) -> bool:
        session = await info.context.authenticate()
        await accounts.logout(session.token_id)
        # sockets opened with this token close at once, in every API process
        await notices.publish_control("token_revoked", token_id=session.token_id)
        return True

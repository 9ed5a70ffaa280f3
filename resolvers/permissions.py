"""Permission classes: every root field declares one (pinned by tests/graphql/test_permissions.py)."""

from __future__ import annotations

from typing import Any

from strawberry.permission import BasePermission

from schema.context import Info


class IsAuthenticated(BasePermission):
    message = "an Authorization: Bearer <token> header is required"

    async def has_permission(self, source: Any, info: Info, **kwargs: Any) -> bool:
        # raises Unauthenticated (code UNAUTHENTICATED) for a missing, expired or revoked token
        await info.context.authenticate()
        return True


class Public(BasePermission):
    """Open to anyone: registering and logging in."""

    async def has_permission(self, source: Any, info: Info, **kwargs: Any) -> bool:
        return True

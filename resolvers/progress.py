from __future__ import annotations

import strawberry

from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.types.progress import Progress
from services.feed import Scope, ScopeKind
from services.kit import NotFound, decode_id


@strawberry.type
class ProgressQueries:
    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="yours (no userId), or of a user you partner for: over their tasks that are not deleted",
    )
    async def progress(self, info: Info, user_id: strawberry.ID | None = None) -> Progress:
        access = await info.context.access()
        wanted = None if user_id is None else decode_id(user_id, "User")
        if user_id is None or access.owns(wanted):
            return Progress(scope=Scope(ScopeKind.USER, access.viewer_id))
        if wanted is None or not access.partners(wanted):
            raise NotFound("no such user among those you partner for")
        # a partner reads the user's history from the partnership's start, as everywhere (partners/access.py)
        return Progress(scope=Scope(ScopeKind.USER, wanted, since=access.history_start(wanted)))

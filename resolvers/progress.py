from __future__ import annotations

import strawberry

from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.types.progress import Progress
from services.errors import NotFound
from services.ids import is_uuid
from services.progress import Scope, ScopeKind


@strawberry.type
class ProgressQueries:
    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="yours (no userId), or of a user you partner for: over their tasks that are not deleted",
    )
    async def progress(self, info: Info, user_id: strawberry.ID | None = None) -> Progress:
        access = await info.context.access()
        if user_id is None or access.owns(user_id):
            return Progress(scope=Scope(ScopeKind.USER, access.viewer_id))
        if not is_uuid(user_id) or not access.partners(user_id):
            raise NotFound("no such user among those you partner for")
        # a partner reads the user's history from the partnership's start, as everywhere (services/access.py)
        return Progress(scope=Scope(ScopeKind.USER, str(user_id), since=access.history_start(user_id)))

from __future__ import annotations

import strawberry

from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.types.progress import Progress
from services.access import is_active_partner
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
        viewer_id = str((await info.context.viewer()).id)
        if user_id is None or str(user_id) == viewer_id:
            return Progress(scope=Scope(ScopeKind.USER, viewer_id))
        if not is_uuid(user_id) or not await is_active_partner(viewer_id, str(user_id)):
            raise NotFound("no such user among those you partner for")
        return Progress(scope=Scope(ScopeKind.USER, str(user_id)))

"""The home screen: what is due across the viewer's tasks and the users they partner for, and its badges."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.types.agenda import AgendaConnection, Badges
from schema.types.pagination import page_request
from services import proofs
from services.kit import NotFound, decode_id, keyset_page
from services.tasks import AGENDA_ORDER, MAX_AGENDA_DAYS, agenda, due_today


@strawberry.type
class AgendaQueries:
    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description=f"instances due in [from, to) (at most {MAX_AGENDA_DAYS} days), by due time: yours and"
        " those of the users you partner for (from the partnership's start), or one user's with userId;"
        " settled, open and each task's next planned instance (later occurrences: Task.upcoming)",
    )
    async def agenda(
        self,
        info: Info,
        from_: Annotated[datetime, strawberry.argument(name="from")],
        to: datetime,
        user_id: strawberry.ID | None = None,
        first: int | None = 20,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> AgendaConnection:
        access = await info.context.access()
        if user_id is None:
            user_ids = access.user_ids
        else:
            wanted = decode_id(user_id, "User")
            if wanted is None or not access.sees_user(wanted):
                raise NotFound("no such user among those you partner for")
            user_ids = frozenset({wanted})
        request = page_request(
            info, AGENDA_ORDER, first=first, after=after, last=last, before=before, default=20
        )
        query = agenda(access, user_ids, from_, to)
        page = await keyset_page(query, AGENDA_ORDER, request)
        return AgendaConnection.of(page, query.count)

    @strawberry.field(permission_classes=[IsAuthenticated])
    async def badges(self, info: Info) -> Badges:
        reviews, appeals = await proofs.decisions_waiting(await info.context.access())
        today = await due_today(await info.context.viewer(), await info.context.now())
        return Badges(reviews_waiting=reviews, appeals_waiting=appeals, due_today=today)

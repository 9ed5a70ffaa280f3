from __future__ import annotations

import strawberry

from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.enums import PartnershipStatus
from schema.types.pagination import Connection, page_request
from schema.types.partnership import Partnership
from services.kit import keyset_page
from services.partners import partners

DEFAULT_PAGE = 20


@strawberry.type
class PartnerQueries:
    @strawberry.field(permission_classes=[IsAuthenticated], description="both directions")
    async def partnerships(self, info: Info) -> list[Partnership]:
        rows = await partners.partnerships_of(await info.context.viewer())
        return [Partnership(row=row) for row in rows]

    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="both directions, newest first; REMOVED only when asked (status, includeRemoved)",
    )
    async def partnerships_connection(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
        status: PartnershipStatus | None = None,
        include_removed: bool | None = False,
    ) -> Connection[Partnership]:
        order = partners.PARTNERSHIP_ORDER
        request = page_request(
            info, order, first=first, after=after, last=last, before=before, default=DEFAULT_PAGE
        )
        query = partners.partnerships_query(
            await info.context.viewer(), status=status, include_removed=bool(include_removed)
        )
        page = await keyset_page(query, order, request)
        return Connection.of(page, order, lambda row: Partnership(row=row))


@strawberry.type
class PartnerMutations:
    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def invite_partner(self, info: Info, email: str) -> Partnership:
        viewer = await info.context.viewer()
        settings = info.context.settings
        invited = await partners.invite_partner(
            viewer, email, settings.public_url, max_per_day=settings.max_invites_per_day
        )
        return Partnership(row=invited)

    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def respond_to_invite(self, info: Info, partnership_id: strawberry.ID, accept: bool) -> Partnership:
        viewer, day = await info.context.viewer(), info.context.policies.horizon_day
        row = await partners.respond_to_invite(viewer, str(partnership_id), accept, day=day)
        return Partnership(row=row)

    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def remove_partner(self, info: Info, partnership_id: strawberry.ID) -> bool:
        viewer, day = await info.context.viewer(), info.context.policies.horizon_day
        await partners.remove_partner(viewer, str(partnership_id), day=day)
        return True

from __future__ import annotations

import strawberry

from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.deprecations import list_replaced_by, replaced_by
from schema.enums import PartnershipStatus
from schema.types.pagination import Connection, page_request
from schema.types.partnership import Partnership
from schema.types.payloads import MutationInput, MutationPayload, settle
from services.kit import decode_id, global_id, keyset_page
from services.partners import partners

DEFAULT_PAGE = 20


@strawberry.type
class PartnerQueries:
    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="both directions",
        deprecation_reason=list_replaced_by("partnershipsConnection"),
    )
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
        return Connection.of(page, order, lambda row: Partnership(row=row), query.count)


@strawberry.input
class PartnershipInviteInput(MutationInput):
    email: str = strawberry.field(description="the address the invite goes to")


@strawberry.input
class PartnershipRespondInput(MutationInput):
    partnership_id: strawberry.ID
    accept: bool


@strawberry.input
class PartnershipRemoveInput(MutationInput):
    partnership_id: strawberry.ID


@strawberry.type
class PartnershipPayload(MutationPayload):
    partnership: Partnership | None = None


@strawberry.type
class PartnershipRemovePayload(MutationPayload):
    removed_partnership_id: strawberry.ID | None = None


async def invite_partner(info: Info, email: str) -> Partnership:
    settings = info.context.settings
    invited = await partners.invite_partner(
        await info.context.viewer(), email, settings.app_url, max_per_day=settings.max_invites_per_day
    )
    return Partnership(row=invited)


async def respond_to_invite(info: Info, partnership_id: strawberry.ID, accept: bool) -> Partnership:
    viewer, day = await info.context.viewer(), info.context.policies.horizon_day
    return Partnership(row=await partners.respond_to_invite(viewer, str(partnership_id), accept, day=day))


async def remove_partner(info: Info, partnership_id: strawberry.ID) -> strawberry.ID:
    viewer, day = await info.context.viewer(), info.context.policies.horizon_day
    await partners.remove_partner(viewer, str(partnership_id), day=day)
    return strawberry.ID(global_id("Partnership", decode_id(partnership_id, "Partnership")))


RESPOND = "accepting needs a verified email equal to the invited one (FORBIDDEN otherwise)"


@strawberry.type
class PartnerMutations:
    @strawberry.mutation(
        permission_classes=[IsAuthenticated], description="asks someone to hold you accountable"
    )
    async def partnership_invite(self, info: Info, input: PartnershipInviteInput) -> PartnershipPayload:
        async def work() -> PartnershipPayload:
            return PartnershipPayload(partnership=await invite_partner(info, input.email))

        return await settle(PartnershipPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=RESPOND)
    async def partnership_respond(self, info: Info, input: PartnershipRespondInput) -> PartnershipPayload:
        async def work() -> PartnershipPayload:
            row = await respond_to_invite(info, input.partnership_id, input.accept)
            return PartnershipPayload(partnership=row)

        return await settle(PartnershipPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description="ends a partnership, either side")
    async def partnership_remove(self, info: Info, input: PartnershipRemoveInput) -> PartnershipRemovePayload:
        async def work() -> PartnershipRemovePayload:
            removed = await remove_partner(info, input.partnership_id)
            return PartnershipRemovePayload(removed_partnership_id=removed)

        return await settle(PartnershipRemovePayload, input, work)


@strawberry.type
class FirstPartnerMutations:
    """The first shape, deprecated: plain arguments, the object as the result, refusals as errors."""

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("partnershipInvite")
    )
    async def invite_partner(self, info: Info, email: str) -> Partnership:
        return await invite_partner(info, email)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("partnershipRespond")
    )
    async def respond_to_invite(self, info: Info, partnership_id: strawberry.ID, accept: bool) -> Partnership:
        return await respond_to_invite(info, partnership_id, accept)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("partnershipRemove")
    )
    async def remove_partner(self, info: Info, partnership_id: strawberry.ID) -> bool:
        await remove_partner(info, partnership_id)
        return True

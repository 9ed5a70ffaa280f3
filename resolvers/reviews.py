from __future__ import annotations

import strawberry
from strawberry.file_uploads import Upload

from resolvers.permissions import IsAuthenticated
from resolvers.proofs import VerificationPayload, media_upload
from schema.context import Info
from schema.deprecations import list_replaced_by, replaced_by
from schema.types.pagination import Connection, page_request
from schema.types.payloads import MutationInput, settle
from schema.types.verification import Verification
from services import proofs
from services.kit import check_page_size, db_now, keyset_page
from services.proofs import appeals


@strawberry.type
class ReviewQueries:
    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="PENDING_REVIEW verifications you may decide, oldest first",
        deprecation_reason=list_replaced_by("reviewQueueConnection"),
    )
    async def review_queue(self, info: Info, first: int | None = 50) -> list[Verification]:
        first = check_page_size(50 if first is None else first)
        rows = await proofs.review_queue(await info.context.access(), first)
        return [Verification(row=row) for row in rows]

    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="PENDING_REVIEW verifications you may decide, oldest first, as a connection",
    )
    async def review_queue_connection(
        self,
        info: Info,
        first: int | None = 50,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> Connection[Verification]:
        order = proofs.REVIEW_ORDER
        request = page_request(info, order, first=first, after=after, last=last, before=before, default=50)
        query = proofs.reviewable(await info.context.access())
        page = await keyset_page(query, order, request)
        return Connection.of(page, order, lambda row: Verification(row=row), query.count)


@strawberry.input
class ReviewRequestInput(MutationInput):
    instance_id: strawberry.ID
    note: str | None = None
    photo: Upload | None = strawberry.field(default=None, description="optional; a GraphQL multipart upload")


@strawberry.input
class ReviewDecideInput(MutationInput):
    verification_id: strawberry.ID
    approve: bool
    comment: str | None = None


@strawberry.input
class AppealCreateInput(MutationInput):
    verification_id: strawberry.ID | None = strawberry.field(
        default=None, description="an automated rejection to overturn; or give instanceId"
    )
    instance_id: strawberry.ID | None = strawberry.field(default=None, description="a MISSED instance")
    note: str | None = None


async def request_review(
    info: Info, instance_id: strawberry.ID, note: str | None, photo: Upload | None
) -> Verification:
    arrival = await info.context.arrival()
    settings = info.context.settings
    data = media_upload(photo, "photo", settings.max_upload_bytes) if photo is not None else None
    row = await proofs.request_review(
        await info.context.viewer(),
        str(instance_id),
        note,
        data,
        arrival=arrival,
        policy=info.context.policies.media,
        timing=info.context.policies.chain,
        max_attempts=settings.max_proof_attempts,
    )
    return Verification(row=row)


async def decide(
    info: Info, verification_id: strawberry.ID, approve: bool, comment: str | None
) -> Verification:
    row = await proofs.decide_review(
        await info.context.viewer(),
        await info.context.access(),
        str(verification_id),
        approve,
        comment,
        arrival=await db_now(),
        timing=info.context.policies.chain,
    )
    return Verification(row=row)


async def appeal(
    info: Info, verification_id: strawberry.ID | None, instance_id: strawberry.ID | None, note: str | None
) -> Verification:
    row = await appeals.appeal(
        await info.context.viewer(),
        None if verification_id is None else str(verification_id),
        None if instance_id is None else str(instance_id),
        note,
        arrival=await db_now(),
        window_seconds=info.context.settings.appeal_window_seconds,
        timing=info.context.policies.chain,
    )
    return Verification(row=row)


APPEAL = "the owner asks partners to overturn an automated rejection or a MISSED instance"


@strawberry.type
class ReviewMutations:
    @strawberry.mutation(
        permission_classes=[IsAuthenticated], description="asks your partners to judge this instance"
    )
    async def review_request(self, info: Info, input: ReviewRequestInput) -> VerificationPayload:
        async def work() -> VerificationPayload:
            done = await request_review(info, input.instance_id, input.note, input.photo)
            return VerificationPayload(verification=done)

        return await settle(VerificationPayload, input, work)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], description="a partner approves or rejects a proof or an appeal"
    )
    async def review_decide(self, info: Info, input: ReviewDecideInput) -> VerificationPayload:
        async def work() -> VerificationPayload:
            done = await decide(info, input.verification_id, input.approve, input.comment)
            return VerificationPayload(verification=done)

        return await settle(VerificationPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=APPEAL)
    async def appeal_create(self, info: Info, input: AppealCreateInput) -> VerificationPayload:
        async def work() -> VerificationPayload:
            done = await appeal(info, input.verification_id, input.instance_id, input.note)
            return VerificationPayload(verification=done)

        return await settle(VerificationPayload, input, work)


@strawberry.type
class FirstReviewMutations:
    """The first shape, deprecated: plain arguments, the object as the result, refusals as errors."""

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("reviewRequest")
    )
    async def request_review(
        self, info: Info, instance_id: strawberry.ID, note: str | None = None, photo: Upload | None = None
    ) -> Verification:
        return await request_review(info, instance_id, note, photo)

    @strawberry.mutation(permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("reviewDecide"))
    async def review(
        self, info: Info, verification_id: strawberry.ID, approve: bool, comment: str | None = None
    ) -> Verification:
        return await decide(info, verification_id, approve, comment)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=APPEAL,
        deprecation_reason=replaced_by("appealCreate"),
    )
    async def appeal(
        self,
        info: Info,
        verification_id: strawberry.ID | None = None,
        instance_id: strawberry.ID | None = None,
        note: str | None = None,
    ) -> Verification:
        return await appeal(info, verification_id, instance_id, note)

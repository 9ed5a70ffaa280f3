from __future__ import annotations

import strawberry
from strawberry.file_uploads import Upload

from resolvers.permissions import IsAuthenticated
from resolvers.proofs import media_upload
from schema.context import Info
from schema.types.pagination import Connection, page_request
from schema.types.verification import Verification
from services import proofs
from services.kit import check_page_size, db_now, keyset_page
from services.proofs import appeals


@strawberry.type
class ReviewQueries:
    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="PENDING_REVIEW verifications you may decide, oldest first",
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
        page = await keyset_page(proofs.reviewable(await info.context.access()), order, request)
        return Connection.of(page, order, lambda row: Verification(row=row))


@strawberry.type
class ReviewMutations:
    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def request_review(
        self, info: Info, instance_id: strawberry.ID, note: str | None = None, photo: Upload | None = None
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

    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def review(
        self, info: Info, verification_id: strawberry.ID, approve: bool, comment: str | None = None
    ) -> Verification:
        arrival = await db_now()
        row = await proofs.decide_review(
            await info.context.viewer(),
            await info.context.access(),
            str(verification_id),
            approve,
            comment,
            arrival=arrival,
            timing=info.context.policies.chain,
        )
        return Verification(row=row)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="the owner asks partners to overturn an automated rejection or a MISSED instance",
    )
    async def appeal(
        self,
        info: Info,
        verification_id: strawberry.ID | None = None,
        instance_id: strawberry.ID | None = None,
        note: str | None = None,
    ) -> Verification:
        settings = info.context.settings
        row = await appeals.appeal(
            await info.context.viewer(),
            None if verification_id is None else str(verification_id),
            None if instance_id is None else str(instance_id),
            note,
            arrival=await db_now(),
            window_seconds=settings.appeal_window_seconds,
            timing=info.context.policies.chain,
        )
        return Verification(row=row)

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from models import RejectionReason as RejectionReasonRow
from models import TaskInstance as TaskInstanceRow
from models import Verification as VerificationRow
from schema.context import Info
from schema.enums import (
    CaptureTimeSource,
    InstanceStatus,
    RejectionReason,
    VerificationMethod,
    VerificationStatus,
)
from schema.links import absolute_url, link_signer
from schema.types.integration import Activity
from schema.types.node import Node
from schema.types.task import GeoPoint
from schema.types.user import User, load_user
from services.kit import global_id
from services.media import media_path
from services.proofs import ActivityRecord

if TYPE_CHECKING:
    from schema.types.instance import TaskInstance


@strawberry.type
class Verification(Node):
    row: strawberry.Private[VerificationRow]
    instance_row: strawberry.Private[TaskInstanceRow | None] = None

    async def _is_owner(self, info: Info) -> bool:
        return (await info.context.viewer()).id == self.row.user_id

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(global_id("Verification", self.row.id))

    @strawberry.field
    async def instance(self, info: Info) -> Annotated[TaskInstance, strawberry.lazy("schema.types.instance")]:
        from schema.types.instance import TaskInstance  # noqa: PLC0415 - instance.py imports this module

        row = self.instance_row or await info.context.loaders.instance.load(str(self.row.instance_id))
        if row is None:
            raise LookupError(f"instance {self.row.instance_id} vanished")
        return TaskInstance(row=row)

    @strawberry.field
    def method(self) -> VerificationMethod:
        return self.row.method

    @strawberry.field
    def status(self) -> VerificationStatus:
        return self.row.status

    @strawberry.field
    def reason(self) -> RejectionReason | None:
        return self.row.reason

    @strawberry.field
    def submitted_at(self) -> datetime:
        return self.row.submitted_at

    @strawberry.field
    def decided_at(self) -> datetime | None:
        return self.row.decided_at

    @strawberry.field(description="GPS; the owner's alone: null for partners")
    async def location(self, info: Info) -> GeoPoint | None:
        if self.row.latitude is None or self.row.longitude is None or not await self._is_owner(info):
            return None
        return GeoPoint(latitude=self.row.latitude, longitude=self.row.longitude)

    @strawberry.field(description="GPS: distance from the geofence centre")
    def distance_meters(self) -> float | None:
        return self.row.distance_meters

    @strawberry.field(
        description="IMPLAUSIBLE_LOCATION: seconds after this fix when the same fix would pass the speed "
        "check (the owner's alone, as it tells how far apart two check-ins were); null otherwise"
    )
    async def retry_after_seconds(self, info: Info) -> int | None:
        if self.row.retry_after_seconds is None or not await self._is_owner(info):
            return None
        return self.row.retry_after_seconds

    async def _media_link(self, info: Info, kind: str, digest: str | None) -> str | None:
        if digest is None or not (await info.context.access()).sees_user(self.row.user_id):
            return None
        session = await info.context.authenticate()
        signer = link_signer(info.context.settings)
        subject = str(self.row.id)
        link = signer.link(media_path(subject), subject, str(session.user.id), kind, session.token_id)
        return absolute_url(info, link)

    @strawberry.field(
        description="a proof that uploads a file (a photo, a video): the cleaned copy kept; an absolute "
        "signed link, the same URL for PROOFLOOP_MEDIA_LINK_PERIOD_SECONDS, dead once your session ends; "
        "owner and active partners only"
    )
    async def media_url(self, info: Info) -> str | None:
        return await self._media_link(info, "media", self.row.media_digest)

    @strawberry.field(description="a proof that uploads a file: its thumbnail; likewise")
    async def thumbnail_url(self, info: Info) -> str | None:
        return await self._media_link(info, "thumbnail", self.row.thumbnail_digest)

    @strawberry.field(
        description="PHOTO/VIDEO: when the file says it was taken (EXIF DateTimeOriginal, with its offset or "
        "in the task's zone; a video's creation time); null when it said nothing (captureTimeSource ABSENT)"
    )
    def captured_at(self) -> datetime | None:
        return self.row.captured_at

    @strawberry.field(description="PHOTO/VIDEO: where capturedAt was read; null for other methods")
    def capture_time_source(self) -> CaptureTimeSource | None:
        return self.row.capture_source

    @strawberry.field(
        description="avoid-a-place, ENTERED_AVOIDED_PLACE: when the first sample inside was recorded "
        "(partners see this time, never a position)"
    )
    def entered_at(self) -> datetime | None:
        if self.row.reason is not RejectionReasonRow.ENTERED_AVOIDED_PLACE:
            return None
        return self.row.recorded_at

    @strawberry.field(description="INTEGRATION: what the integration reported; owner and active partners")
    def activity(self) -> Activity | None:
        if self.row.activity is None:
            return None
        return Activity(record=ActivityRecord.read(self.row.activity), owner_id=str(self.row.user_id))

    @strawberry.field
    def note(self) -> str | None:
        return self.row.note

    @strawberry.field
    async def reviewer(self, info: Info) -> User | None:
        return await load_user(info, self.row.reviewer_id) if self.row.reviewer_id else None

    @strawberry.field
    def review_comment(self) -> str | None:
        return self.row.review_comment

    @strawberry.field(description="on an appeal's review: the status the instance keeps if the appeal fails")
    def appeal_of(self) -> InstanceStatus | None:
        return self.row.appeal_of

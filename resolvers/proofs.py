from __future__ import annotations

from datetime import datetime

import strawberry
from starlette.datastructures import UploadFile
from strawberry.file_uploads import Upload

from models import VerificationMethod
from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.inputs import GeoPointInput, aware
from schema.types.integration import IntegrationConnection, endpoint_url
from schema.types.verification import Verification
from services import proofs
from services.kit import BadInput, PayloadTooLarge
from services.proofs import MediaUpload


def media_upload(upload: object, field: str, max_bytes: int) -> MediaUpload:
    """The uploaded file, to be read only once the cheap checks pass and a decode slot is held."""
    if not isinstance(upload, UploadFile):
        raise BadInput(field, "must be a file sent as a multipart upload")
    size = upload.size or 0
    if size > max_bytes:
        raise PayloadTooLarge(f"{field}: the file is larger than {max_bytes} bytes")

    async def read() -> bytes:
        data = await upload.read(max_bytes + 1)
        if len(data) > max_bytes:  # the middleware caps the body too
            raise PayloadTooLarge(f"{field}: the file is larger than {max_bytes} bytes")
        return data

    return MediaUpload(field=field, size=size, read=read)


@strawberry.input(description="one location fix the phone recorded")
class LocationSampleInput:
    latitude: float
    longitude: float
    accuracy_meters: float
    recorded_at: datetime

    def to_check_in(self) -> proofs.CheckIn:
        return proofs.CheckIn(
            latitude=self.latitude,
            longitude=self.longitude,
            accuracy_meters=self.accuracy_meters,
            recorded_at=aware(self.recorded_at, "samples.recordedAt"),
        )


@strawberry.type(description="what a batch of samples added")
class LocationReport:
    accepted: int = strawberry.field(description="kept: recorded in the window, accurate enough")
    ignored: int = strawberry.field(description="recorded outside the window, or vaguer than the rule")
    total: int = strawberry.field(description="kept for this instance so far")


@strawberry.type
class ProofMutations:
    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def check_in(
        self,
        info: Info,
        instance_id: strawberry.ID,
        location: GeoPointInput,
        accuracy_meters: float,
        recorded_at: datetime | None = None,
    ) -> Verification:
        arrival = await info.context.arrival()
        settings = info.context.settings
        check_in = proofs.CheckIn(
            latitude=location.latitude,
            longitude=location.longitude,
            accuracy_meters=accuracy_meters,
            recorded_at=aware(recorded_at, "recordedAt") if recorded_at is not None else None,
        )
        row = await proofs.check_in(
            await info.context.viewer(),
            str(instance_id),
            check_in,
            arrival=arrival,
            max_speed_kmh=settings.max_speed_kmh,
            timing=info.context.policies.chain,
            max_attempts=settings.max_proof_attempts,
        )
        return Verification(row=row)

    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def submit_photo(self, info: Info, instance_id: strawberry.ID, photo: Upload) -> Verification:
        return await _submit_media(info, instance_id, photo, "photo", VerificationMethod.PHOTO)

    @strawberry.mutation(permission_classes=[IsAuthenticated])
    async def submit_video(self, info: Info, instance_id: strawberry.ID, video: Upload) -> Verification:
        return await _submit_media(info, instance_id, video, "video", VerificationMethod.VIDEO)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="avoid-a-place: location samples for your open instance, judged at its due time; "
        "at most 500 per request, kept only as when and whether inside, never shown to partners",
    )
    async def report_locations(
        self, info: Info, instance_id: strawberry.ID, samples: list[LocationSampleInput]
    ) -> LocationReport:
        report = await proofs.report_locations(
            await info.context.viewer(),
            str(instance_id),
            [s.to_check_in() for s in samples],
            arrival=await info.context.arrival(),
        )
        return LocationReport(accepted=report.accepted, ignored=report.ignored, total=report.total)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description="gives your INTEGRATION task a new event endpoint and secret (shown once); the "
        "previous pair stops working at once",
    )
    async def connect_integration(self, info: Info, task_id: strawberry.ID) -> IntegrationConnection:
        row, secret = await proofs.connect_integration(await info.context.viewer(), str(task_id))
        assert row.integration_key is not None
        return IntegrationConnection(
            task_row=row, endpoint_url=endpoint_url(info, row.integration_key), secret=secret
        )


async def _submit_media(
    info: Info, instance_id: strawberry.ID, upload: Upload, field: str, method: VerificationMethod
) -> Verification:
    arrival = await info.context.arrival()  # stamped when the request started, before its body was read
    settings = info.context.settings
    row = await proofs.submit_media(
        method,
        await info.context.viewer(),
        str(instance_id),
        media_upload(upload, field, settings.max_upload_bytes),
        arrival=arrival,
        policy=info.context.policies.media,
        timing=info.context.policies.chain,
        max_attempts=settings.max_proof_attempts,
    )
    return Verification(row=row)

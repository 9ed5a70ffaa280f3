from __future__ import annotations

from datetime import datetime

import strawberry
from starlette.datastructures import UploadFile
from strawberry.file_uploads import Upload

from models import VerificationMethod
from resolvers.permissions import IsAuthenticated
from schema.context import Info
from schema.deprecations import replaced_by
from schema.inputs import GeoPointInput, aware
from schema.types.integration import IntegrationConnection, endpoint_url
from schema.types.payloads import MutationInput, MutationPayload, settle
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


@strawberry.input
class ProofCheckInInput(MutationInput):
    instance_id: strawberry.ID
    location: GeoPointInput
    accuracy_meters: float
    recorded_at: datetime | None = strawberry.field(
        default=None, description="when the phone took the fix; left out: when the request arrived"
    )


@strawberry.input
class ProofPhotoSubmitInput(MutationInput):
    instance_id: strawberry.ID
    photo: Upload = strawberry.field(description="sent as a GraphQL multipart request")


@strawberry.input
class ProofVideoSubmitInput(MutationInput):
    instance_id: strawberry.ID
    video: Upload = strawberry.field(description="sent as a GraphQL multipart request")


@strawberry.input
class ProofLocationsReportInput(MutationInput):
    instance_id: strawberry.ID
    samples: list[LocationSampleInput] = strawberry.field(description="at most 500")


@strawberry.input
class IntegrationConnectInput(MutationInput):
    task_id: strawberry.ID


@strawberry.type
class VerificationPayload(MutationPayload):
    verification: Verification | None = strawberry.field(
        default=None,
        description="ACCEPTED, PENDING_REVIEW, or REJECTED with its reason: a verdict, not an error",
    )


@strawberry.type
class ProofLocationsReportPayload(MutationPayload):
    report: LocationReport | None = None


@strawberry.type
class IntegrationConnectPayload(MutationPayload):
    connection: IntegrationConnection | None = strawberry.field(
        default=None, description="its secret is shown this once"
    )


async def check_in(
    info: Info,
    instance_id: strawberry.ID,
    location: GeoPointInput,
    accuracy_meters: float,
    recorded_at: datetime | None,
) -> Verification:
    arrival = await info.context.arrival()
    settings = info.context.settings
    proof = proofs.CheckIn(
        latitude=location.latitude,
        longitude=location.longitude,
        accuracy_meters=accuracy_meters,
        recorded_at=aware(recorded_at, "recordedAt") if recorded_at is not None else None,
    )
    row = await proofs.check_in(
        await info.context.viewer(),
        str(instance_id),
        proof,
        arrival=arrival,
        max_speed_kmh=settings.max_speed_kmh,
        timing=info.context.policies.chain,
        max_attempts=settings.max_proof_attempts,
    )
    return Verification(row=row)


async def report_locations(
    info: Info, instance_id: strawberry.ID, samples: list[LocationSampleInput]
) -> LocationReport:
    report = await proofs.report_locations(
        await info.context.viewer(),
        str(instance_id),
        [s.to_check_in() for s in samples],
        arrival=await info.context.arrival(),
    )
    return LocationReport(accepted=report.accepted, ignored=report.ignored, total=report.total)


async def connect_integration(info: Info, task_id: strawberry.ID) -> IntegrationConnection:
    row, secret = await proofs.connect_integration(await info.context.viewer(), str(task_id))
    assert row.integration_key is not None
    return IntegrationConnection(
        task_row=row, endpoint_url=endpoint_url(info, row.integration_key), secret=secret
    )


REPORT = (
    "avoid-a-place: location samples for your open instance, judged at its due time; at most 500 per"
    " request, kept only as when and whether inside, never shown to partners"
)
CONNECT = (
    "gives your INTEGRATION task a new event endpoint and secret (shown once); the previous pair stops"
    " working at once"
)


@strawberry.type
class ProofMutations:
    @strawberry.mutation(permission_classes=[IsAuthenticated], description="a GPS check-in")
    async def proof_check_in(self, info: Info, input: ProofCheckInInput) -> VerificationPayload:
        async def work() -> VerificationPayload:
            done = await check_in(
                info, input.instance_id, input.location, input.accuracy_meters, input.recorded_at
            )
            return VerificationPayload(verification=done)

        return await settle(VerificationPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description="a photo, judged on arrival")
    async def proof_photo_submit(self, info: Info, input: ProofPhotoSubmitInput) -> VerificationPayload:
        async def work() -> VerificationPayload:
            done = await _submit_media(
                info, input.instance_id, input.photo, "photo", VerificationMethod.PHOTO
            )
            return VerificationPayload(verification=done)

        return await settle(VerificationPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description="a video, judged on arrival")
    async def proof_video_submit(self, info: Info, input: ProofVideoSubmitInput) -> VerificationPayload:
        async def work() -> VerificationPayload:
            done = await _submit_media(
                info, input.instance_id, input.video, "video", VerificationMethod.VIDEO
            )
            return VerificationPayload(verification=done)

        return await settle(VerificationPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=REPORT)
    async def proof_locations_report(
        self, info: Info, input: ProofLocationsReportInput
    ) -> ProofLocationsReportPayload:
        async def work() -> ProofLocationsReportPayload:
            report = await report_locations(info, input.instance_id, input.samples)
            return ProofLocationsReportPayload(report=report)

        return await settle(ProofLocationsReportPayload, input, work)

    @strawberry.mutation(permission_classes=[IsAuthenticated], description=CONNECT)
    async def integration_connect(
        self, info: Info, input: IntegrationConnectInput
    ) -> IntegrationConnectPayload:
        async def work() -> IntegrationConnectPayload:
            return IntegrationConnectPayload(connection=await connect_integration(info, input.task_id))

        return await settle(IntegrationConnectPayload, input, work)


@strawberry.type
class FirstProofMutations:
    """The first shape, deprecated: plain arguments, the object as the result, refusals as errors."""

    @strawberry.mutation(permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("proofCheckIn"))
    async def check_in(
        self,
        info: Info,
        instance_id: strawberry.ID,
        location: GeoPointInput,
        accuracy_meters: float,
        recorded_at: datetime | None = None,
    ) -> Verification:
        return await check_in(info, instance_id, location, accuracy_meters, recorded_at)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("proofPhotoSubmit")
    )
    async def submit_photo(self, info: Info, instance_id: strawberry.ID, photo: Upload) -> Verification:
        return await _submit_media(info, instance_id, photo, "photo", VerificationMethod.PHOTO)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated], deprecation_reason=replaced_by("proofVideoSubmit")
    )
    async def submit_video(self, info: Info, instance_id: strawberry.ID, video: Upload) -> Verification:
        return await _submit_media(info, instance_id, video, "video", VerificationMethod.VIDEO)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=REPORT,
        deprecation_reason=replaced_by("proofLocationsReport"),
    )
    async def report_locations(
        self, info: Info, instance_id: strawberry.ID, samples: list[LocationSampleInput]
    ) -> LocationReport:
        return await report_locations(info, instance_id, samples)

    @strawberry.mutation(
        permission_classes=[IsAuthenticated],
        description=CONNECT,
        deprecation_reason=replaced_by("integrationConnect"),
    )
    async def connect_integration(self, info: Info, task_id: strawberry.ID) -> IntegrationConnection:
        return await connect_integration(info, task_id)


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

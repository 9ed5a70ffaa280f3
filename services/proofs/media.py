"""Photo and video proofs: the cheap checks first, then one bounded decode off the event loop.

Order of work: who may prove the instance and its state, then the window at arrival (a proof outside it
is REJECTED without its body being read), then the storage quota, then a decode slot (DecodeGate), and
only then the bytes are read and decoded, within pixel, memory and frame budgets taken from the headers.
A rejected proof keeps its fingerprints (reuse is judged against them) but no media; an accepted one's
blobs outlive only a committed row (services/media_storage.py).

Reuse is judged against every earlier photo/video proof of the user on OTHER instances, rejected ones
included: a picture sent once (even a minute late) cannot prove another day. A retry on the same
instance is never reuse.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from models import RejectionReason, User, Verification, VerificationMethod, VerificationStatus
from services.chain import ChainTiming
from services.decode_gate import DecodeGate
from services.errors import BadInput
from services.media_storage import StagedBlobs, check_quota
from services.proofs.pipeline import (
    ProofTarget,
    holding_deadline,
    new_verification,
    proof_target,
    record_proof,
    window_reason,
)
from storage.blobs import BlobStore
from verification.errors import InvalidInput
from verification.photo import capture_in_window, inspect_photo, is_reused
from verification.video import inspect_video, is_reused_video

# Enough history to catch a recycled picture without reading a heavy user's whole past.
REUSE_LOOKBACK = 2000

T = TypeVar("T")
RecordOutcome = Callable[[Verification, RejectionReason | None], Awaitable[Verification]]


@dataclass(frozen=True)
class MediaPolicy:
    media_dir: Path
    gate: DecodeGate
    max_image_pixels: int
    max_decode_bytes: int
    max_video_frames: int
    quota_bytes: int


@dataclass(frozen=True)
class MediaUpload:
    """An uploaded file not read yet: its size as the multipart parser counted it, and how to read it."""

    field: str
    size: int
    read: Callable[[], Awaitable[bytes]]


@dataclass(frozen=True)
class Media:
    clean: bytes
    clean_mime: str
    thumbnail: bytes
    fingerprints: tuple[int, ...]  # kept on the row: one photo's pHashes, or the sampled frames' of a video
    probes: tuple[int, ...]  # compared against earlier fingerprints (a photo's mirrored and turned copies)
    captured_at: datetime | None
    duration_seconds: float | None = None

    @property
    def stored_bytes(self) -> int:
        return len(self.clean) + len(self.thumbnail)


async def _decoded(upload: MediaUpload, policy: MediaPolicy, inspect: Callable[[bytes], T]) -> T:
    """Read and decode in one of the process's decode slots, in a thread; InvalidInput is BAD_USER_INPUT."""
    async with policy.gate.slot():
        data = await upload.read()
        try:
            return await asyncio.to_thread(inspect, data)
        except InvalidInput as exc:
            raise BadInput(exc.field, exc.message) from None


async def decode_photo(upload: MediaUpload, *, owner: User, policy: MediaPolicy) -> Media:
    facts = await _decoded(
        upload,
        policy,
        lambda data: inspect_photo(
            data,
            owner_timezone=owner.timezone,
            field=upload.field,
            max_pixels=policy.max_image_pixels,
            max_decode_bytes=policy.max_decode_bytes,
        ),
    )
    return Media(
        facts.clean, facts.clean_mime, facts.thumbnail, facts.fingerprints, facts.probes, facts.captured_at
    )


async def decode_video(upload: MediaUpload, *, policy: MediaPolicy) -> Media:
    facts = await _decoded(
        upload,
        policy,
        lambda data: inspect_video(
            data, field=upload.field, max_pixels=policy.max_image_pixels, max_frames=policy.max_video_frames
        ),
    )
    return Media(
        facts.clean,
        facts.clean_mime,
        facts.thumbnail,
        facts.keyframe_hashes,
        facts.keyframe_hashes,
        facts.created_at,
        duration_seconds=facts.duration_seconds,
    )


async def earlier_fingerprints(user_id: str, instance_id: str) -> list[list[int]]:
    """Fingerprints of the user's photo/video proofs on other instances, newest first."""
    rows = await (
        Verification.filter(user_id=user_id, fingerprints__isnull=False)
        .exclude(instance_id=instance_id)
        .order_by("-submitted_at")
        .limit(REUSE_LOOKBACK)
        .values_list("fingerprints", flat=True)
    )
    return [[int(h, 16) for h in row] for row in rows if isinstance(row, list)]


async def media_reason(target: ProofTarget, media: Media, arrival: datetime) -> RejectionReason | None:
    """The first rule a photo or video breaks: window, capture time, then reuse (TOO_SHORT: the caller)."""
    instance = target.instance
    reason = window_reason(target, arrival)
    if reason is None and not capture_in_window(media.captured_at, instance.opens_at, instance.closes_at):
        reason = RejectionReason.CAPTURED_OUTSIDE_WINDOW
    if reason is None:
        earlier = await earlier_fingerprints(str(target.task.owner_id), str(instance.id))
        # up to REUSE_LOOKBACK rows x fingerprints x probes comparisons: off the event loop
        if media.duration_seconds is None:
            flat = [h for hashes in earlier for h in hashes]
            reused = await asyncio.to_thread(is_reused, media.probes, flat)
        else:
            reused = await asyncio.to_thread(is_reused_video, media.fingerprints, earlier)
        if reused:
            reason = RejectionReason.REUSED_MEDIA
    return reason


async def record_media_proof(
    target: ProofTarget,
    media: Media,
    reason: RejectionReason | None,
    arrival: datetime,
    policy: MediaPolicy,
    record: RecordOutcome,
    **extra: object,
) -> Verification:
    """Record the outcome; only a proof the transaction accepts keeps its clean copy and thumbnail."""
    draft = new_verification(target, arrival, fingerprints=[f"{h:016x}" for h in media.fingerprints], **extra)
    if reason is not None:
        return await record(draft, reason)
    await check_quota(str(target.task.owner_id), media.stored_bytes, policy.quota_bytes)
    staged = StagedBlobs(BlobStore(policy.media_dir), (media.clean, media.thumbnail))
    await staged.write()
    draft.media_digest, draft.thumbnail_digest = staged.digests
    draft.media_mime, draft.media_bytes = media.clean_mime, media.stored_bytes
    try:
        row = await record(draft, None)
    except BaseException:
        await staged.discard()
        raise
    if row.status is VerificationStatus.REJECTED:  # the instance moved on while we judged: keep no media
        await Verification.filter(id=row.id).update(
            media_digest=None, media_mime=None, thumbnail_digest=None, media_bytes=None
        )
        row.media_digest = row.media_mime = row.thumbnail_digest = row.media_bytes = None
        await staged.discard()
    else:
        await staged.confirm()
    return row


async def _outside_window(target: ProofTarget, arrival: datetime, timing: ChainTiming) -> Verification | None:
    """A proof that arrived outside the window is REJECTED as it is: nothing read, decoded or stored."""
    reason = window_reason(target, arrival)
    if reason is None:
        return None
    return await record_proof(target, new_verification(target, arrival), reason, arrival, timing)


async def submit_photo(
    viewer: User,
    instance_id: str,
    upload: MediaUpload,
    *,
    arrival: datetime,
    policy: MediaPolicy,
    timing: ChainTiming,
    max_attempts: int,
) -> Verification:
    target = await proof_target(viewer, instance_id, VerificationMethod.PHOTO, max_attempts=max_attempts)
    if (late := await _outside_window(target, arrival, timing)) is not None:
        return late
    await check_quota(str(viewer.id), upload.size, policy.quota_bytes)
    async with holding_deadline(target, arrival, timing):
        media = await decode_photo(upload, owner=viewer, policy=policy)
        reason = await media_reason(target, media, arrival)
        return await record_media_proof(
            target, media, reason, arrival, policy, lambda d, r: record_proof(target, d, r, arrival, timing)
        )


async def submit_video(
    viewer: User,
    instance_id: str,
    upload: MediaUpload,
    *,
    arrival: datetime,
    policy: MediaPolicy,
    timing: ChainTiming,
    max_attempts: int,
) -> Verification:
    target = await proof_target(viewer, instance_id, VerificationMethod.VIDEO, max_attempts=max_attempts)
    if (late := await _outside_window(target, arrival, timing)) is not None:
        return late
    await check_quota(str(viewer.id), upload.size, policy.quota_bytes)
    async with holding_deadline(target, arrival, timing):
        media = await decode_video(upload, policy=policy)
        minimum = target.task.video_min_duration_seconds or 0.0
        reason = RejectionReason.TOO_SHORT if (media.duration_seconds or 0.0) < minimum else None
        if reason is None:
            reason = await media_reason(target, media, arrival)
        return await record_media_proof(
            target, media, reason, arrival, policy, lambda d, r: record_proof(target, d, r, arrival, timing)
        )

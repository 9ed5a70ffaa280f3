"""Photo and video proofs: the cheap checks first, then one bounded decode off the event loop.

The pipeline (pipeline.py) runs the cheap checks first; only then, holding a decode slot (DecodeGate),
are the bytes read and decoded, within pixel, memory and frame budgets taken from the headers. A
rejected proof keeps its fingerprints (reuse is judged against them) but no media; an accepted one's
blobs outlive only a committed row (services/media/blobs.py).

Reuse is judged against every earlier photo/video proof of the user on OTHER instances, rejected ones
included: a picture sent once (even a minute late) cannot prove another day. A retry on the same
instance is never reuse.
"""

from __future__ import annotations

import asyncio
import ctypes
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from tortoise.expressions import Q

from models import (
    CaptureTimeSource,
    RejectionReason,
    User,
    Verification,
    VerificationMethod,
    VerificationStatus,
)
from rules.errors import InvalidInput
from rules.photo import capture_in_window, inspect_photo, is_reused
from rules.video import inspect_video, is_reused_video
from services.chain import ChainTiming
from services.kit import BadInput
from services.media import MediaCopy, MediaStorage
from services.proofs.decode_gate import DecodeGate
from services.proofs.pipeline import Judgement, ProofKind, ProofTarget, prove, settle_verified
from storage import BlobStore

# Enough history to catch a recycled picture without reading a heavy user's whole past.
REUSE_LOOKBACK = 2000
_LIBC = ctypes.CDLL(None)  # the process's own symbols: glibc's malloc_trim where there is one

T = TypeVar("T")


@dataclass(frozen=True)
class MediaPolicy:
    store: BlobStore
    gate: DecodeGate
    max_image_pixels: int
    max_decode_bytes: int
    max_video_frames: int
    max_video_pixels: int
    quota_bytes: int

    @property
    def storage(self) -> MediaStorage:
        return MediaStorage(self.store, self.quota_bytes)


@dataclass(frozen=True)
class MediaUpload:
    """An uploaded file not read yet: its size as the multipart parser counted it, and how to read it."""

    field: str
    size: int
    read: Callable[[], Awaitable[bytes]]


@dataclass(frozen=True)
class Media:
    copy: MediaCopy
    fingerprints: tuple[int, ...]  # kept on the row: one photo's pHashes, or the sampled frames' of a video
    probes: tuple[int, ...]  # compared against earlier fingerprints (a photo's mirrored and turned copies)
    captured_at: datetime | None
    capture_source: CaptureTimeSource  # ABSENT when the file carried no capture time
    duration_seconds: float | None = None


def media_kind(
    method: VerificationMethod,
    upload: MediaUpload,
    policy: MediaPolicy,
    judge: Callable[[ProofTarget], Awaitable[Judgement]],
) -> ProofKind:
    """A proof whose upload is read only after the cheap checks, and counted against the quota first."""
    return ProofKind(
        method, accept=settle_verified, judge=judge, upload_bytes=upload.size, storage=policy.storage
    )


async def submit_media(
    method: VerificationMethod,
    viewer: User,
    instance_id: str,
    upload: MediaUpload,
    *,
    arrival: datetime,
    policy: MediaPolicy,
    timing: ChainTiming,
    max_attempts: int,
) -> Verification:
    """A PHOTO or VIDEO proof: the pipeline's cheap checks, then the kind's judge on the upload."""
    judge_media = MEDIA_JUDGES[method]

    async def judge(target: ProofTarget) -> Judgement:
        return await judge_media(target, upload, policy)

    kind = media_kind(method, upload, policy, judge)
    return await prove(viewer, instance_id, kind, arrival=arrival, timing=timing, max_attempts=max_attempts)


async def judge_photo(target: ProofTarget, upload: MediaUpload, policy: MediaPolicy) -> Judgement:
    """Decode (a capture time without an offset read in the task's zone), then capture time and reuse."""
    media = await decode_photo(upload, zone=target.task.timezone, policy=policy)
    return _judgement(media, await media_reason(target, media))


async def judge_video(target: ProofTarget, upload: MediaUpload, policy: MediaPolicy) -> Judgement:
    """Decode, then the minimum duration, the capture window and reuse."""
    media = await decode_video(upload, policy=policy)
    minimum = target.task.video_min_duration_seconds or 0.0
    if (media.duration_seconds or 0.0) < minimum:
        return _judgement(media, RejectionReason.TOO_SHORT)
    return _judgement(media, await media_reason(target, media))


MediaJudge = Callable[[ProofTarget, MediaUpload, MediaPolicy], Awaitable[Judgement]]

# the media kinds, each with its judge: the one place a new media kind is added
MEDIA_JUDGES: dict[VerificationMethod, MediaJudge] = {
    VerificationMethod.PHOTO: judge_photo,
    VerificationMethod.VIDEO: judge_video,
}


def _judgement(media: Media, reason: RejectionReason | None) -> Judgement:
    evidence = {
        "fingerprints": [f"{h:016x}" for h in media.fingerprints],
        "captured_at": media.captured_at,
        "capture_source": media.capture_source,
    }
    return Judgement(reason=reason, evidence=evidence, media=media.copy)


async def _decoded(upload: MediaUpload, policy: MediaPolicy, inspect: Callable[[bytes], T]) -> T:
    """Read and decode in one of the process's decode slots, in a thread; InvalidInput is BAD_USER_INPUT."""
    async with policy.gate.slot():
        data = await upload.read()
        try:
            return await asyncio.to_thread(_giving_memory_back, inspect, data)
        except InvalidInput as exc:
            raise BadInput(exc.field, exc.message) from None


def _giving_memory_back(inspect: Callable[[bytes], T], data: bytes) -> T:
    try:
        return inspect(data)
    finally:
        # glibc keeps a decode's freed frames in its arenas (~90 MB after one 4K video): hand them back
        trim = getattr(_LIBC, "malloc_trim", None)
        if trim is not None:
            trim(0)


async def decode_photo(upload: MediaUpload, *, zone: str, policy: MediaPolicy) -> Media:
    facts = await _decoded(
        upload,
        policy,
        lambda data: inspect_photo(
            data,
            zone=zone,
            field=upload.field,
            max_pixels=policy.max_image_pixels,
            max_decode_bytes=policy.max_decode_bytes,
        ),
    )
    return Media(
        MediaCopy(facts.clean, facts.thumbnail, facts.clean_mime),
        facts.fingerprints,
        facts.probes,
        facts.captured_at,
        CaptureTimeSource(facts.capture_source or CaptureTimeSource.ABSENT),
    )


async def decode_video(upload: MediaUpload, *, policy: MediaPolicy) -> Media:
    facts = await _decoded(
        upload,
        policy,
        lambda data: inspect_video(
            data, field=upload.field, max_pixels=policy.max_video_pixels, max_frames=policy.max_video_frames
        ),
    )
    return Media(
        MediaCopy(facts.clean, facts.thumbnail, facts.clean_mime),
        facts.keyframe_hashes,
        facts.keyframe_hashes,
        facts.created_at,
        CaptureTimeSource.ABSENT if facts.created_at is None else CaptureTimeSource.CONTAINER,
        duration_seconds=facts.duration_seconds,
    )


async def earlier_fingerprints(user_id: str, instance_id: str, *, counts_many: bool) -> list[list[int]]:
    """Fingerprints of the user's photo/video proofs on other instances, newest first; with `counts_many`
    (a quota goal, whose period is one instance counting several proofs) also those of this instance that
    count or wait for a review: one photo is one visit, however often it is sent. A rejected proof of this
    instance is never one of them, so a retry after a rejection is no reuse."""
    earlier = Verification.filter(user_id=user_id, fingerprints__isnull=False)
    if counts_many:
        counting = [VerificationStatus.ACCEPTED, VerificationStatus.PENDING_REVIEW]
        earlier = earlier.filter(Q(instance_id__not=instance_id) | Q(status__in=counting))
    else:
        earlier = earlier.exclude(instance_id=instance_id)
    rows = await (
        earlier.order_by("-submitted_at").limit(REUSE_LOOKBACK).values_list("fingerprints", flat=True)
    )
    return [[int(h, 16) for h in row] for row in rows if isinstance(row, list)]


async def media_reason(target: ProofTarget, media: Media) -> RejectionReason | None:
    """The first rule a photo or video breaks after the window: capture time, then reuse."""
    instance = target.instance
    if media.captured_at is None and target.task.require_capture_time:
        return RejectionReason.NO_CAPTURE_TIME
    if not capture_in_window(media.captured_at, instance.opens_at, instance.closes_at):
        return RejectionReason.CAPTURED_OUTSIDE_WINDOW
    counts_many = target.task.quota_count is not None
    earlier = await earlier_fingerprints(str(target.task.owner_id), str(instance.id), counts_many=counts_many)
    # up to REUSE_LOOKBACK rows x fingerprints x probes comparisons: off the event loop
    if media.duration_seconds is None:
        flat = [h for hashes in earlier for h in hashes]
        reused = await asyncio.to_thread(is_reused, media.probes, flat)
    else:
        reused = await asyncio.to_thread(is_reused_video, media.fingerprints, earlier)
    return RejectionReason.REUSED_MEDIA if reused else None

"""Photo and video proofs: decode for real off the event loop, judge, keep a metadata-free copy.

Reuse is judged against every earlier photo/video proof of the user on OTHER instances, rejected ones
included: a picture sent once (even a minute late) cannot prove another day. A retry on the same
instance is never reuse.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from models import RejectionReason, User, Verification, VerificationMethod
from services.chain import ChainTiming
from services.errors import BadInput
from services.proofs import (
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


@dataclass(frozen=True)
class MediaPolicy:
    media_dir: Path
    max_image_pixels: int


@dataclass(frozen=True)
class Media:
    clean: bytes
    clean_mime: str
    thumbnail: bytes
    fingerprints: tuple[int, ...]  # one pHash for a photo, the sampled frames' for a video
    captured_at: datetime | None
    duration_seconds: float | None = None


async def _decoded(inspect: Callable[[], T]) -> T:
    """Run a CPU-bound decoder in a thread; its InvalidInput becomes BAD_USER_INPUT."""
    try:
        return await asyncio.to_thread(inspect)
    except InvalidInput as exc:
        raise BadInput(exc.field, exc.message) from None


async def inspect_photo_bytes(data: bytes, *, owner: User, policy: MediaPolicy, field: str) -> Media:
    facts = await _decoded(
        lambda: inspect_photo(
            data, owner_timezone=owner.timezone, field=field, max_pixels=policy.max_image_pixels
        )
    )
    return Media(facts.clean, facts.clean_mime, facts.thumbnail, (facts.phash,), facts.captured_at)


async def inspect_video_bytes(data: bytes, *, policy: MediaPolicy, field: str) -> Media:
    facts = await _decoded(lambda: inspect_video(data, field=field, max_pixels=policy.max_image_pixels))
    return Media(
        facts.clean,
        facts.clean_mime,
        facts.thumbnail,
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
        if media.duration_seconds is None:
            reused = is_reused(media.fingerprints[0], (h for hashes in earlier for h in hashes))
        else:
            reused = is_reused_video(media.fingerprints, earlier)
        if reused:
            reason = RejectionReason.REUSED_MEDIA
    return reason


async def media_verification(
    target: ProofTarget, media: Media, arrival: datetime, policy: MediaPolicy, **extra: object
) -> Verification:
    """An unsaved Verification carrying the stored clean copy, thumbnail and fingerprints."""
    store = BlobStore(policy.media_dir)
    media_digest = await asyncio.to_thread(store.put, media.clean)
    thumbnail_digest = await asyncio.to_thread(store.put, media.thumbnail)
    return new_verification(
        target,
        arrival,
        media_digest=media_digest,
        media_mime=media.clean_mime,
        thumbnail_digest=thumbnail_digest,
        fingerprints=[f"{h:016x}" for h in media.fingerprints],
        **extra,
    )


async def submit_photo(
    viewer: User,
    instance_id: str,
    data: bytes,
    *,
    arrival: datetime,
    policy: MediaPolicy,
    timing: ChainTiming,
    max_attempts: int,
) -> Verification:
    target = await proof_target(viewer, instance_id, VerificationMethod.PHOTO, max_attempts=max_attempts)
    async with holding_deadline(target, arrival, timing):
        media = await inspect_photo_bytes(data, owner=viewer, policy=policy, field="photo")
        reason = await media_reason(target, media, arrival)
        draft = await media_verification(target, media, arrival, policy)
        return await record_proof(target, draft, reason, arrival, timing)


async def submit_video(
    viewer: User,
    instance_id: str,
    data: bytes,
    *,
    arrival: datetime,
    policy: MediaPolicy,
    timing: ChainTiming,
    max_attempts: int,
) -> Verification:
    target = await proof_target(viewer, instance_id, VerificationMethod.VIDEO, max_attempts=max_attempts)
    async with holding_deadline(target, arrival, timing):
        media = await inspect_video_bytes(data, policy=policy, field="video")
        minimum = target.task.video_min_duration_seconds or 0.0
        reason = window_reason(target, arrival)
        if reason is None and (media.duration_seconds or 0.0) < minimum:
            reason = RejectionReason.TOO_SHORT
        if reason is None:
            reason = await media_reason(target, media, arrival)
        draft = await media_verification(target, media, arrival, policy)
        return await record_proof(target, draft, reason, arrival, timing)

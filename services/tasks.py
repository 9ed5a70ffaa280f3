"""Task lifecycle: create, edit, pause, resume, delete — each touches one task and its open instance."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from models import (
    Partnership,
    PartnershipStatus,
    ReviewTimeoutPolicy,
    Task,
    TaskState,
    User,
    VerificationMethod,
)
from services.chain import OPEN_STATUSES, ChainTiming, cancel_open_instance, plan_next_instance
from services.db import db_now, write_transaction
from services.errors import BadInput, Conflict, Forbidden, NotFound
from services.ids import parse_id
from services.schedules import check_schedule, next_due_after
from verification.recurrence import Schedule

MAX_TITLE = 200
MAX_DESCRIPTION = 5000
MAX_REVIEW_WINDOW = 30 * 24 * 3600


@dataclass(frozen=True)
class GpsRuleDraft:
    latitude: float
    longitude: float
    radius_meters: float
    max_accuracy_meters: float


@dataclass(frozen=True)
class PartnerRuleDraft:
    review_window_seconds: int
    on_timeout: ReviewTimeoutPolicy


@dataclass(frozen=True)
class TaskDraft:
    title: str
    description: str | None
    method: VerificationMethod
    schedule: Schedule
    gps: GpsRuleDraft | None = None
    video_min_duration_seconds: float | None = None
    partner: PartnerRuleDraft | None = None


@dataclass(frozen=True)
class SchedulePatch:
    starts_at: datetime | None = None
    rrule: str | None = None
    rrule_set: bool = False  # rrule may be set to null (one-off), so presence is explicit
    timezone: str | None = None
    window_seconds: int | None = None
    grace_seconds: int | None = None


@dataclass(frozen=True)
class TaskPatch:
    title: str | None = None
    description: str | None = None
    description_set: bool = False
    schedule: SchedulePatch | None = None
    gps: GpsRuleDraft | None = None
    video_min_duration_seconds: float | None = None
    partner: PartnerRuleDraft | None = None


def _check_title(title: str) -> str:
    title = title.strip()
    if not 1 <= len(title) <= MAX_TITLE:
        raise BadInput("input.title", f"must be 1 to {MAX_TITLE} characters")
    return title


def _check_description(description: str | None) -> str | None:
    if description is not None and len(description) > MAX_DESCRIPTION:
        raise BadInput("input.description", f"must be at most {MAX_DESCRIPTION} characters")
    return description


def _finite(value: float, field: str) -> float:
    if not math.isfinite(value):
        raise BadInput(field, "must be a finite number")
    return value


def check_gps_rule(rule: GpsRuleDraft) -> None:
    lat = _finite(rule.latitude, "input.gps.center.latitude")
    lon = _finite(rule.longitude, "input.gps.center.longitude")
    if not -90 <= lat <= 90:
        raise BadInput("input.gps.center.latitude", "must be between -90 and 90")
    if not -180 <= lon <= 180:
        raise BadInput("input.gps.center.longitude", "must be between -180 and 180")
    if _finite(rule.radius_meters, "input.gps.radiusMeters") <= 0:
        raise BadInput("input.gps.radiusMeters", "must be greater than 0")
    if _finite(rule.max_accuracy_meters, "input.gps.maxAccuracyMeters") <= 0:
        raise BadInput("input.gps.maxAccuracyMeters", "must be greater than 0")


def check_video_rule(min_duration_seconds: float) -> None:
    if not 0 < _finite(min_duration_seconds, "input.video.minDurationSeconds") <= 3600:
        raise BadInput("input.video.minDurationSeconds", "must be greater than 0 and at most 3600")


def check_partner_rule(rule: PartnerRuleDraft) -> None:
    if not 0 < rule.review_window_seconds <= MAX_REVIEW_WINDOW:
        raise BadInput(
            "input.partnerReview.reviewWindowSeconds", f"must be between 1 and {MAX_REVIEW_WINDOW} seconds"
        )


def _check_rules(draft: TaskDraft) -> None:
    if draft.method is VerificationMethod.GPS and draft.gps is None:
        raise BadInput("input.gps", "is required when method is GPS")
    if draft.method is VerificationMethod.VIDEO and draft.video_min_duration_seconds is None:
        raise BadInput("input.video", "is required when method is VIDEO")
    if draft.gps is not None:
        check_gps_rule(draft.gps)
    if draft.video_min_duration_seconds is not None:
        check_video_rule(draft.video_min_duration_seconds)
    if draft.partner is not None:
        check_partner_rule(draft.partner)


async def create_task(
    owner: User, draft: TaskDraft, *, min_interval_seconds: int, timing: ChainTiming
) -> Task:
    title = _check_title(draft.title)
    description = _check_description(draft.description)
    _check_rules(draft)
    draft = replace(draft, schedule=whole_seconds(draft.schedule))
    await check_schedule(draft.schedule, min_interval_seconds=min_interval_seconds)
    partner = draft.partner
    if draft.method is VerificationMethod.PARTNER and partner is None:
        partner = PartnerRuleDraft(review_window_seconds=86400, on_timeout=ReviewTimeoutPolicy.REJECT)
    async with write_transaction():
        now = await db_now()
        task = await Task.create(
            owner=owner,
            title=title,
            description=description,
            method=draft.method,
            starts_at=draft.schedule.starts_at,
            rrule=draft.schedule.rrule,
            timezone=draft.schedule.timezone,
            window_seconds=draft.schedule.window_seconds,
            grace_seconds=draft.schedule.grace_seconds,
            gps_latitude=draft.gps.latitude if draft.gps else None,
            gps_longitude=draft.gps.longitude if draft.gps else None,
            gps_radius_meters=draft.gps.radius_meters if draft.gps else None,
            gps_max_accuracy_meters=draft.gps.max_accuracy_meters if draft.gps else None,
            video_min_duration_seconds=draft.video_min_duration_seconds,
            review_window_seconds=partner.review_window_seconds if partner else None,
            review_on_timeout=partner.on_timeout if partner else None,
        )
        # a one-off whose time has passed plans nothing and ends at once
        await plan_next_instance(task, after=_before(task.starts_at), now=now, timing=timing)
    return task


def whole_seconds(schedule: Schedule) -> Schedule:
    """Occurrences fall on whole seconds, so DTSTART does too (else the first one would be skipped)."""
    return replace(schedule, starts_at=schedule.starts_at.replace(microsecond=0))


def _before(at: datetime) -> datetime:
    """Just before `at`, so an occurrence exactly at `at` still counts as upcoming."""
    return at - timedelta(microseconds=1)


async def is_active_partner(partner_id: str, user_id: str) -> bool:
    return await Partnership.exists(user_id=user_id, partner_id=partner_id, status=PartnershipStatus.ACTIVE)


async def visible_task(viewer: User, task_id: str) -> Task:
    """A task its owner or an ACTIVE partner of the owner may see; NOT_FOUND for everyone else."""
    task = await Task.get_or_none(id=parse_id(task_id, "task"), deleted_at=None)
    if task is None:
        raise NotFound("no such task")
    if task.owner_id != viewer.id and not await is_active_partner(str(viewer.id), str(task.owner_id)):
        raise NotFound("no such task")
    return task


async def _owned_task_locked(owner: User, task_id: str) -> Task:
    """Lock the caller's own task for an edit (others' tasks are NOT_FOUND: never leak existence)."""
    task = await Task.filter(id=parse_id(task_id, "task"), deleted_at=None).select_for_update().first()
    if task is None or str(task.owner_id) != str(owner.id):
        if task is not None and await is_active_partner(str(owner.id), str(task.owner_id)):
            raise Forbidden("only the task's owner may change it")
        raise NotFound("no such task")
    return task


def _patched_schedule(task: Task, patch: SchedulePatch) -> Schedule:
    return Schedule(
        starts_at=patch.starts_at if patch.starts_at is not None else task.starts_at,
        rrule=patch.rrule if patch.rrule_set else task.rrule,
        timezone=patch.timezone if patch.timezone is not None else task.timezone,
        window_seconds=patch.window_seconds if patch.window_seconds is not None else task.window_seconds,
        grace_seconds=patch.grace_seconds if patch.grace_seconds is not None else task.grace_seconds,
    )


async def update_task(
    owner: User, task_id: str, patch: TaskPatch, *, min_interval_seconds: int, timing: ChainTiming
) -> Task:
    title = _check_title(patch.title) if patch.title is not None else None
    description = _check_description(patch.description)
    if patch.gps is not None:
        check_gps_rule(patch.gps)
    if patch.video_min_duration_seconds is not None:
        check_video_rule(patch.video_min_duration_seconds)
    if patch.partner is not None:
        check_partner_rule(patch.partner)
    async with write_transaction():
        task = await _owned_task_locked(owner, task_id)
        if patch.gps is not None and task.method is not VerificationMethod.GPS:
            raise BadInput("input.gps", "applies only to GPS tasks")
        if patch.video_min_duration_seconds is not None and task.method is not VerificationMethod.VIDEO:
            raise BadInput("input.video", "applies only to VIDEO tasks")
        if patch.partner is not None and task.method is not VerificationMethod.PARTNER:
            raise BadInput("input.partnerReview", "applies only to PARTNER tasks")
        schedule = whole_seconds(_patched_schedule(task, patch.schedule)) if patch.schedule else None
        if schedule is not None:
            await check_schedule(schedule, min_interval_seconds=min_interval_seconds)
        _apply_fields(task, title, description, patch)
        if schedule is not None:
            await _replan(task, schedule, timing)
        else:
            # rule changes apply in place: proofs read the rule from the task row when they arrive
            await task.save()
    return task


def _apply_fields(task: Task, title: str | None, description: str | None, patch: TaskPatch) -> None:
    if title is not None:
        task.title = title
    if patch.description_set:
        task.description = description
    if patch.gps is not None:
        task.gps_latitude, task.gps_longitude = patch.gps.latitude, patch.gps.longitude
        task.gps_radius_meters = patch.gps.radius_meters
        task.gps_max_accuracy_meters = patch.gps.max_accuracy_meters
    if patch.video_min_duration_seconds is not None:
        task.video_min_duration_seconds = patch.video_min_duration_seconds
    if patch.partner is not None:
        task.review_window_seconds = patch.partner.review_window_seconds
        task.review_on_timeout = patch.partner.on_timeout


async def _replan(task: Task, schedule: Schedule, timing: ChainTiming) -> None:
    """A schedule change cancels the PENDING instance and plans from the new rule (this task only)."""
    now = await db_now()
    task.starts_at, task.rrule, task.timezone = schedule.starts_at, schedule.rrule, schedule.timezone
    task.window_seconds, task.grace_seconds = schedule.window_seconds, schedule.grace_seconds
    task.chain_version += 1
    await task.save()
    await cancel_open_instance(task, now)
    if task.state is TaskState.ENDED and next_due_after(task, now) is not None:
        task.state = TaskState.ACTIVE  # a new schedule revives a task whose old rule ran out
        await task.save(update_fields=["state", "updated_at"])
    if task.state is TaskState.ACTIVE:
        await plan_next_instance(task, after=_before(task.starts_at), now=now, timing=timing)


async def pause_task(owner: User, task_id: str) -> Task:
    async with write_transaction():
        task = await _owned_task_locked(owner, task_id)
        if task.state is TaskState.PAUSED:
            return task
        if task.state is not TaskState.ACTIVE:
            raise Conflict(f"a task in state {task.state.value} cannot be paused")
        now = await db_now()
        task.state = TaskState.PAUSED
        task.chain_version += 1  # links already in flight become stale
        await task.save(update_fields=["state", "chain_version", "updated_at"])
        await cancel_open_instance(task, now)
    return task


async def resume_task(owner: User, task_id: str, *, timing: ChainTiming) -> Task:
    async with write_transaction():
        task = await _owned_task_locked(owner, task_id)
        if task.state is TaskState.ACTIVE:
            return task
        if task.state is not TaskState.PAUSED:
            raise Conflict(f"a task in state {task.state.value} cannot be resumed")
        now = await db_now()
        if next_due_after(task, now) is None:
            raise Conflict("the task has no occurrence left after now; change its schedule to resume it")
        task.state = TaskState.ACTIVE
        task.chain_version += 1
        await task.save(update_fields=["state", "chain_version", "updated_at"])
        # the first occurrence after now: the paused time is skipped, never MISSED
        await plan_next_instance(task, after=now, now=now, timing=timing)
    return task


async def delete_task(owner: User, task_id: str) -> None:
    """Soft-delete: the task leaves listings; its history and events keep resolving it."""
    async with write_transaction():
        task = await _owned_task_locked(owner, task_id)
        now = await db_now()
        task.deleted_at = now
        task.chain_version += 1
        await task.save(update_fields=["deleted_at", "chain_version", "updated_at"])
        await cancel_open_instance(task, now, statuses=OPEN_STATUSES)

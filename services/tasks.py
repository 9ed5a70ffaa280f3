"""Task lifecycle: create, edit, pause, resume, delete — each touches one task and its open instance."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from models import (
    ReviewTimeoutPolicy,
    Task,
    TaskInstance,
    TaskState,
    User,
    VerificationMethod,
)
from services.access import is_active_partner
from services.chain import OPEN_STATUSES, ChainTiming, cancel_open_instance, plan_next_instance
from services.db import connection, db_now, is_sqlite, write_transaction
from services.errors import BadInput, Conflict, Forbidden, NotFound
from services.ids import parse_id
from services.schedules import (
    DueTimes,
    check_schedule,
    known_schedule,
    next_due_after,
    prefetch_due_times,
    schedule_of,
)
from services.task_drafts import (
    DEFAULT_REVIEW_WINDOW_SECONDS,
    PartnerRuleDraft,
    SchedulePatch,
    TaskDraft,
    TaskPatch,
    check_description,
    check_given_rules,
    check_rules,
    check_title,
)
from verification.recurrence import Schedule


async def create_task(
    owner: User, draft: TaskDraft, *, min_interval_seconds: int, timing: ChainTiming, max_tasks: int
) -> Task:
    task, _ = await create_task_planned(
        owner, draft, min_interval_seconds=min_interval_seconds, timing=timing, max_tasks=max_tasks
    )
    return task


async def create_task_planned(
    owner: User, draft: TaskDraft, *, min_interval_seconds: int, timing: ChainTiming, max_tasks: int
) -> tuple[Task, TaskInstance | None]:
    """Create the task and plan its first instance in one transaction: (task, that instance or None)."""
    title = check_title(draft.title)
    description = check_description(draft.description)
    check_rules(draft)
    schedule = whole_seconds(draft.schedule)
    checked = known_schedule(schedule, min_interval_seconds=min_interval_seconds, budget=timing.recurrence)
    if checked is None:
        await check_task_quota(owner, max_tasks)  # before the schedule's costlier validation
        checked = await check_schedule(
            schedule, min_interval_seconds=min_interval_seconds, budget=timing.recurrence
        )
    draft = replace(draft, schedule=checked)
    due = await prefetch_due_times(draft.schedule, _before(draft.schedule.starts_at), timing.recurrence)
    partner = draft.partner
    if draft.method is VerificationMethod.PARTNER and partner is None:
        partner = PartnerRuleDraft(DEFAULT_REVIEW_WINDOW_SECONDS, on_timeout=ReviewTimeoutPolicy.REJECT)
    async with write_transaction():
        # serializes this owner's creates, so two at once cannot both pass the quota
        await User.filter(id=owner.id).select_for_update().first()
        count, now = await _task_count_and_now(owner)  # a statement after the lock: it sees their commits
        if count >= max_tasks:
            raise _over_quota(max_tasks)
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
            count_ends_at=draft.schedule.count_ends_at,
            gps_latitude=draft.gps.latitude if draft.gps else None,
            gps_longitude=draft.gps.longitude if draft.gps else None,
            gps_radius_meters=draft.gps.radius_meters if draft.gps else None,
            gps_max_accuracy_meters=draft.gps.max_accuracy_meters if draft.gps else None,
            video_min_duration_seconds=draft.video_min_duration_seconds,
            review_window_seconds=partner.review_window_seconds if partner else None,
            review_on_timeout=partner.on_timeout if partner else None,
        )
        # a one-off whose time has passed plans nothing and ends at once
        instance = await plan_next_instance(
            task, after=_before(task.starts_at), now=now, timing=timing, due=due
        )
    return task, instance


async def check_task_quota(owner: User, max_tasks: int) -> None:
    if await Task.filter(owner_id=owner.id, deleted_at=None).count() >= max_tasks:
        raise _over_quota(max_tasks)


def _over_quota(max_tasks: int) -> Conflict:
    return Conflict(f"you have {max_tasks} tasks, the most allowed: delete one to create another")


_TASK_COUNT_AND_NOW = (
    "SELECT COUNT(*) AS n, clock_timestamp() AS now FROM tasks WHERE owner_id = $1 AND deleted_at IS NULL"
)


async def _task_count_and_now(owner: User) -> tuple[int, datetime]:
    """The owner's tasks and the database clock, in one statement on PostgreSQL."""
    if is_sqlite():
        return await Task.filter(owner_id=owner.id, deleted_at=None).count(), await db_now()
    rows = await connection().execute_query_dict(_TASK_COUNT_AND_NOW, [str(owner.id)])
    return int(rows[0]["n"]), rows[0]["now"].astimezone(UTC)


def whole_seconds(schedule: Schedule) -> Schedule:
    """Occurrences fall on whole seconds, so DTSTART does too (else the first one would be skipped)."""
    return replace(schedule, starts_at=schedule.starts_at.replace(microsecond=0))


def _before(at: datetime) -> datetime:
    """Just before `at`, so an occurrence exactly at `at` still counts as upcoming."""
    return at - timedelta(microseconds=1)


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
    title = check_title(patch.title) if patch.title is not None else None
    description = check_description(patch.description)
    check_given_rules(patch.gps, patch.video_min_duration_seconds, patch.partner)
    for _ in range(_SCHEDULE_ATTEMPTS):
        # the schedule is checked and expanded before the row lock, then re-read under it
        checked, due = await _checked_schedule(owner, task_id, patch.schedule, min_interval_seconds, timing)
        async with write_transaction():
            task = await _owned_task_locked(owner, task_id)
            if patch.schedule is not None and (
                checked is None or _new_schedule(task, patch.schedule) != replace(checked, count_ends_at=None)
            ):
                continue  # edited meanwhile: check the schedule it has now
            await _apply_update(task, title, description, patch, checked, due, timing)
            return task
    raise Conflict("the task's schedule kept changing during this update; try again")


_SCHEDULE_ATTEMPTS = 3


def _new_schedule(task: Task, patch: SchedulePatch) -> Schedule:
    return whole_seconds(_patched_schedule(task, patch))


async def _checked_schedule(
    owner: User, task_id: str, patch: SchedulePatch | None, min_interval_seconds: int, timing: ChainTiming
) -> tuple[Schedule | None, DueTimes | None]:
    if patch is None:
        return None, None
    current = await Task.get_or_none(id=parse_id(task_id, "task"), deleted_at=None)
    if current is None or str(current.owner_id) != str(owner.id):
        return None, None  # the locked read answers NOT_FOUND or FORBIDDEN without judging the input
    schedule = _new_schedule(current, patch)
    schedule = await check_schedule(
        schedule, min_interval_seconds=min_interval_seconds, budget=timing.recurrence
    )
    return schedule, await prefetch_due_times(schedule, _before(schedule.starts_at), timing.recurrence)


async def _apply_update(
    task: Task,
    title: str | None,
    description: str | None,
    patch: TaskPatch,
    schedule: Schedule | None,
    due: DueTimes | None,
    timing: ChainTiming,
) -> None:
    if patch.gps is not None and task.method is not VerificationMethod.GPS:
        raise BadInput("input.gps", "applies only to GPS tasks")
    if patch.video_min_duration_seconds is not None and task.method is not VerificationMethod.VIDEO:
        raise BadInput("input.video", "applies only to VIDEO tasks")
    if patch.partner is not None and task.method is not VerificationMethod.PARTNER:
        raise BadInput("input.partnerReview", "applies only to PARTNER tasks")
    _apply_fields(task, title, description, patch)
    if schedule is not None:
        await _replan(task, schedule, timing, due)
    else:
        # rule changes apply in place: proofs read the rule from the task row when they arrive
        await task.save()


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


async def _replan(task: Task, schedule: Schedule, timing: ChainTiming, due: DueTimes | None) -> None:
    """A schedule change cancels the PENDING instance and plans from the new rule (this task only)."""
    now = await db_now()
    task.starts_at, task.rrule, task.timezone = schedule.starts_at, schedule.rrule, schedule.timezone
    task.window_seconds, task.grace_seconds = schedule.window_seconds, schedule.grace_seconds
    task.count_ends_at = schedule.count_ends_at
    task.chain_version += 1
    await task.save()
    await cancel_open_instance(task, now)
    if task.state is TaskState.ENDED and await next_due_after(task, now, timing.recurrence, due) is not None:
        task.state = TaskState.ACTIVE  # a new schedule revives a task whose old rule ran out
        await task.save(update_fields=["state", "updated_at"])
    if task.state is TaskState.ACTIVE:
        await plan_next_instance(task, after=_before(task.starts_at), now=now, timing=timing, due=due)


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
    current = await Task.get_or_none(id=parse_id(task_id, "task"), deleted_at=None)
    due = None
    if current is not None and str(current.owner_id) == str(owner.id):
        due = await prefetch_due_times(schedule_of(current), _before(current.starts_at), timing.recurrence)
    async with write_transaction():
        task = await _owned_task_locked(owner, task_id)
        if task.state is TaskState.ACTIVE:
            return task
        if task.state is not TaskState.PAUSED:
            raise Conflict(f"a task in state {task.state.value} cannot be resumed")
        now = await db_now()
        if await next_due_after(task, now, timing.recurrence, due) is None:
            raise Conflict("the task has no occurrence left after now; change its schedule to resume it")
        task.state = TaskState.ACTIVE
        task.chain_version += 1
        await task.save(update_fields=["state", "chain_version", "updated_at"])
        # the first occurrence after now: the paused time is skipped, never MISSED
        await plan_next_instance(task, after=now, now=now, timing=timing, due=due)
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

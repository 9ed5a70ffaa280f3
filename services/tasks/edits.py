"""The edits that change a locked task and its chain: every edit path (a request, a pending change that
came due) goes through these, inside the caller's transaction with the task row locked."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from tortoise.expressions import F
from tortoise.queryset import QuerySet

from models import InstanceStatus, LocationSample, Task, TaskInstance, TaskState, Verification
from rules.recurrence import Schedule
from services.chain import OPEN_STATUSES, ChainTiming, NextPlan, cancel_open_instances, plan_next_instances
from services.kit import db_now
from services.reminders import stored
from services.schedules import DueTimes, next_due_after
from services.tasks.activity_rules import stored_activity_rule
from services.tasks.drafts import TaskPatch


def whole_seconds(schedule: Schedule) -> Schedule:
    """Occurrences fall on whole seconds, so DTSTART does too (else the first one would be skipped)."""
    return replace(schedule, starts_at=schedule.starts_at.replace(microsecond=0))


def before(at: datetime) -> datetime:
    """Just before `at`, so an occurrence exactly at `at` still counts as upcoming."""
    return at - timedelta(microseconds=1)


def apply_fields(task: Task, title: str | None, description: str | None, patch: TaskPatch) -> None:
    if title is not None:
        task.title = title
    if patch.description_set:
        task.description = description
    if patch.gps is not None:
        task.gps_latitude, task.gps_longitude = patch.gps.latitude, patch.gps.longitude
        task.gps_radius_meters = patch.gps.radius_meters
        task.gps_max_accuracy_meters = patch.gps.max_accuracy_meters
    for rule, value in patch.column_rules.items():
        setattr(task, rule.column, value)
    if patch.partner is not None:
        task.review_window_seconds = patch.partner.review_window_seconds
        task.review_on_timeout = patch.partner.on_timeout
    if patch.activity is not None:
        task.activity_rule = stored_activity_rule(patch.activity)
    if patch.require_capture_time is not None:
        task.require_capture_time = patch.require_capture_time
    if patch.reminders is not None:
        task.reminders = stored(patch.reminders)
    if patch.quota_count is not None:
        task.quota_count = patch.quota_count
    if patch.quota_min_gap_seconds is not None:
        task.quota_min_gap_seconds = patch.quota_min_gap_seconds


@dataclass(frozen=True)
class Replan:
    """A locked task's new schedule, with its due times expanded before the lock (or None)."""

    task: Task
    schedule: Schedule
    due: DueTimes | None = None


# What a re-plan writes on the task row (besides the counters the planning step writes).
_SCHEDULE_COLUMNS = [
    "starts_at",
    "rrule",
    "timezone",
    "window_seconds",
    "grace_seconds",
    "count_ends_at",
    "rule_revision",
    "chain_version",
    "state",
    "updated_at",
]


async def replan(task: Task, schedule: Schedule, timing: ChainTiming, due: DueTimes | None) -> None:
    """A schedule change cancels the PENDING instance and plans from the new rule (this task only); an
    open instance that already holds evidence is kept (holding_evidence)."""
    await replan_all([Replan(task, schedule, due)], await db_now(), timing)


async def replan_all(replans: list[Replan], now: datetime, timing: ChainTiming) -> None:
    """replan for a set of locked tasks, each planned from its own new rule, in a fixed number of
    statements. The task's other columns are the caller's to save."""
    if not replans:
        return
    floors = await _served_walls(replans)
    for r in replans:
        task, schedule = r.task, r.schedule
        task.starts_at, task.rrule, task.timezone = schedule.starts_at, schedule.rrule, schedule.timezone
        task.window_seconds, task.grace_seconds = schedule.window_seconds, schedule.grace_seconds
        task.count_ends_at = schedule.count_ends_at
        task.chain_version += 1
        task.rule_revision += 1
    tasks = [r.task for r in replans]
    kept = await holding_evidence(tasks)
    await cancel_open_instances([t for t in tasks if str(t.id) not in kept], now)
    for task in tasks:
        if (instance_id := kept.get(str(task.id))) is not None:
            # it settles under the rule it was planned with, in the new chain; the next is planned after it
            await TaskInstance.filter(id=instance_id).update(chain_version=task.chain_version)
    for r in replans:
        revives = r.task.state is TaskState.ENDED
        if revives and await next_due_after(r.task, now, timing.recurrence, r.due) is not None:
            r.task.state = TaskState.ACTIVE  # a new schedule revives a task whose old rule ran out
    await Task.bulk_update(tasks, fields=_SCHEDULE_COLUMNS)
    plans = [
        NextPlan(r.task, max(before(r.task.starts_at), floors.get(str(r.task.id), MIN_INSTANT)), r.due)
        for r in replans
        if r.task.state is TaskState.ACTIVE and str(r.task.id) not in kept
    ]
    await plan_next_instances(plans, now=now, timing=timing)


MIN_INSTANT = datetime.min.replace(tzinfo=UTC)
_SERVED = (InstanceStatus.VERIFIED, InstanceStatus.MISSED, InstanceStatus.REJECTED, InstanceStatus.EXCUSED)


async def _served_walls(replans: list[Replan]) -> dict[str, datetime]:
    """Of the tasks whose zone changes, the wall time their chain has served, read in the new zone: the
    next instance comes after it. A move keeps wall times, so an occurrence proved at 07:00 in Berlin is
    not owed again at 07:00 the same day in New York (moving east loses the hours, as the clock does).
    One read by primary key order per moving task (a zone changes rarely), none when no zone changes."""
    floors: dict[str, datetime] = {}
    for r in replans:
        if r.schedule.timezone == r.task.timezone:
            continue
        latest = (
            await TaskInstance.filter(task_id=r.task.id, status__in=_SERVED)
            .order_by("-seq")
            .first()
            .values_list("due_at", flat=True)
        )
        if isinstance(latest, datetime):
            wall = latest.astimezone(ZoneInfo(r.task.timezone)).replace(tzinfo=None)
            floors[str(r.task.id)] = wall.replace(tzinfo=ZoneInfo(r.schedule.timezone)).astimezone(UTC)
    return floors


async def holding_evidence(tasks: list[Task]) -> dict[str, str]:
    """Of the tasks' PENDING instances, those that already hold evidence, by task id: a proof of any
    verdict, a counted proof of a quota period, an avoid-a-place sample. A schedule edit never cancels
    one: what was recorded would be erased and a fresh instance at the same due time take its place."""
    if not tasks:
        return {}
    open_rows = TaskInstance.filter(task_id__in=[t.id for t in tasks], status=InstanceStatus.PENDING)
    rows = await open_rows.values_list("id", "task_id", "proofs_counted")
    if not rows:
        return {}
    ids = [row[0] for row in rows]
    proved = set(await Verification.filter(instance_id__in=ids).values_list("instance_id", flat=True))
    sampled = set(await LocationSample.filter(instance_id__in=ids).values_list("instance_id", flat=True))
    return {
        str(task_id): str(instance_id)
        for instance_id, task_id, counted in rows
        if counted or instance_id in proved or instance_id in sampled
    }


async def pause_locked(task: Task, now: datetime) -> None:
    await pause_all([task], now)


async def pause_all(tasks: list[Task], now: datetime) -> None:
    """Pause locked tasks: their links already in flight become stale, their PENDING instances cancel."""
    if not tasks:
        return
    for task in tasks:
        task.state, task.updated_at = TaskState.PAUSED, now
        task.chain_version += 1  # the rows are locked: the stored version moves on with it
    await _rows(tasks).update(state=TaskState.PAUSED, chain_version=F("chain_version") + 1, updated_at=now)
    await cancel_open_instances(tasks, now)


async def delete_locked(task: Task, now: datetime) -> None:
    """Soft-delete: the task leaves listings; its history and events keep resolving it."""
    await delete_all([task], now)


async def delete_all(tasks: list[Task], now: datetime) -> None:
    """delete_locked for a set of locked tasks: nothing is left to wait for, nothing open stays owed."""
    if not tasks:
        return
    for task in tasks:
        task.deleted_at, task.updated_at = now, now
        task.chain_version += 1
        task.pending_change, task.pending_effective_at = None, None
    await _rows(tasks).update(
        deleted_at=now,
        chain_version=F("chain_version") + 1,
        pending_change=None,
        pending_effective_at=None,
        updated_at=now,
    )
    await cancel_open_instances(tasks, now, statuses=OPEN_STATUSES)


def _rows(tasks: list[Task]) -> QuerySet[Task]:
    return Task.filter(id__in=[task.id for task in tasks])

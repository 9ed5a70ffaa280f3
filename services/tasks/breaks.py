"""Planned breaks: days off scheduled ahead for a task, or for all of a user's tasks.

The occurrences due inside a break are not planned (the chain skips them as it skips an outage's, see
services/chain/breaks.py), so they are never MISSED, never reminded of, and neither streaks nor progress
count them. A break is an easier commitment: under a commitment horizon it applies only from the
horizon's end (the days inside it were promised and stay due), which is what waiting out the horizon
would do. Ending a break early is harder and applies at once. Each task's break is its own row, its days
read in the task's zone when it is scheduled.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from models import InstanceStatus, Task, TaskBreak, TaskInstance, TaskState, User
from rules.breaks import MAX_BREAK_DAYS, BreakSpan, break_span, covering
from services.accounts import horizon_of
from services.chain import (
    ChainTiming,
    NextPlan,
    break_spans,
    cancel_open_instances,
    first_due_outside,
    has_breaks_ahead,
    plan_next_instances,
)
from services.kit import BadInput, Conflict, NotFound, db_now, parse_id, write_transaction
from services.partners import require_own_task
from services.schedules import due_times_after, next_due_after, schedule_of

# Breaks still ahead per task: a few holidays, not a way to pause forever in slices.
MAX_BREAKS_AHEAD = 10
FIELD = "input"


@dataclass(frozen=True)
class BreakRequest:
    task_id: str | None  # None: every task of the owner's that is not deleted or ended
    starts_on: date
    ends_on: date


def check_request(request: BreakRequest) -> None:
    if request.ends_on < request.starts_on:
        raise BadInput(f"{FIELD}.endsOn", "must be on or after startsOn")
    if (request.ends_on - request.starts_on).days + 1 > MAX_BREAK_DAYS:
        raise BadInput(f"{FIELD}.endsOn", f"a break is at most {MAX_BREAK_DAYS} days")


async def _owned_tasks_locked(owner: User, task_id: str | None) -> list[Task]:
    """The tasks the break is for, locked in id order (two requests never wait on each other crosswise)."""
    if task_id is None:
        rows = Task.filter(owner_id=owner.id, deleted_at=None, state__in=(TaskState.ACTIVE, TaskState.PAUSED))
        return list(await rows.order_by("id").select_for_update())
    found = await Task.filter(id=parse_id(task_id, "task"), deleted_at=None).select_for_update().first()
    task = await require_own_task(str(owner.id), found, "only the task's owner may schedule its breaks")
    if task.state is TaskState.ENDED:
        raise Conflict("the task has ENDED: it has nothing left to break")
    return [task]


async def schedule_break(
    owner: User, request: BreakRequest, *, timing: ChainTiming, horizon_day: timedelta
) -> list[TaskBreak]:
    """One break per task, applied at once: an open instance due inside it is canceled and the task's
    next instance planned after it."""
    check_request(request)
    async with write_transaction():
        tasks = await _owned_tasks_locked(owner, request.task_id)
        now = await db_now()
        not_before = now + horizon_of(owner, now, horizon_day)
        spans = {
            str(t.id): break_span(request.starts_on, request.ends_on, t.timezone, not_before) for t in tasks
        }
        for task in tasks:
            span = spans[str(task.id)]
            if span.ends_at <= not_before:
                raise BadInput(
                    f"{FIELD}.endsOn",
                    "the break ends before your commitment horizon does: the days inside it are promised "
                    f"(a break may cover time from {not_before.isoformat()} on)",
                )
        await _refuse_past_quota(tasks, now)
        rows = [
            TaskBreak(
                task_id=task.id,
                starts_on=request.starts_on,
                ends_on=request.ends_on,
                applies_from=spans[str(task.id)].applies_from,
                ends_at=spans[str(task.id)].ends_at,
                created_at=now,
            )
            for task in tasks
        ]
        await TaskBreak.bulk_create(rows)
        for task in tasks:
            until = spans[str(task.id)].ends_at
            task.break_until = until if task.break_until is None else max(task.break_until, until)
        if tasks:
            await Task.bulk_update(tasks, fields=["break_until", "updated_at"])
        await _replan_inside(tasks, spans, now, timing)
    return rows


async def _refuse_past_quota(tasks: list[Task], now: datetime) -> None:
    for task in tasks:
        ahead = await TaskBreak.filter(task_id=task.id, ends_at__gt=now).count()
        if ahead >= MAX_BREAKS_AHEAD:
            raise Conflict(f"a task has at most {MAX_BREAKS_AHEAD} breaks ahead; end one first")


async def _replan_inside(
    tasks: list[Task], spans: dict[str, BreakSpan], now: datetime, timing: ChainTiming
) -> None:
    """Cancel each ACTIVE task's PENDING instance that the new break covers and plan after the break."""
    active = {str(t.id): t for t in tasks if t.state is TaskState.ACTIVE}
    if not active:
        return
    open_rows = await TaskInstance.filter(task_id__in=list(active), status=InstanceStatus.PENDING)
    # planned again from the canceled occurrence on: the break skips it and any after it that it covers
    covered = [
        NextPlan(active[str(i.task_id)], i.due_at - timedelta(microseconds=1))
        for i in open_rows
        if spans[str(i.task_id)].covers(i.due_at)
    ]
    await _replan(covered, now, timing)


async def _replan(plans: list[NextPlan], now: datetime, timing: ChainTiming) -> None:
    """Cancel each task's PENDING instance and plan its first occurrence after the plan's moment."""
    if not plans:
        return
    tasks = [plan.task for plan in plans]
    for task in tasks:
        task.chain_version += 1  # links already sent for the canceled instance die on it
    await Task.bulk_update(tasks, fields=["chain_version", "updated_at"])
    await cancel_open_instances(tasks, now)
    await plan_next_instances(plans, now=now, timing=timing)


async def end_break(owner: User, break_id: str, *, timing: ChainTiming) -> TaskBreak:
    """End a break now (one not begun yet is dropped): harder, so at once. When that makes an occurrence
    due earlier than the task's open instance, the chain is planned again from now."""
    row = await TaskBreak.filter(id=parse_id(break_id, "break")).first()
    if row is None:
        raise NotFound("no such break")
    async with write_transaction():
        found = await Task.filter(id=row.task_id, deleted_at=None).select_for_update().first()
        task = await require_own_task(
            str(owner.id), found, "only the task's owner may end its breaks", missing="no such break"
        )
        row = await TaskBreak.get(id=row.id)
        now = await db_now()
        if row.ended_early_at is not None or row.ends_at <= now:
            return row  # over already: nothing changes
        row.ended_early_at, row.ends_at = now, max(min(row.ends_at, now), row.applies_from)
        if row.applies_from > now:
            row.ends_at = row.applies_from  # not begun: it covers nothing
        await row.save(update_fields=["ended_early_at", "ends_at"])
        remaining = await TaskBreak.filter(task_id=task.id, ends_at__gt=now).order_by("-ends_at").first()
        task.break_until = remaining.ends_at if remaining is not None else None
        await task.save(update_fields=["break_until", "updated_at"])
        if task.state is TaskState.ACTIVE:
            after = await _planned_through(task, now)
            if await _due_earlier(task, after, now, timing):
                await _replan([NextPlan(task, after)], now, timing)
    return row


async def _planned_through(task: Task, now: datetime) -> datetime:
    """Where planning resumes: now, or the latest occurrence already decided or in review when later
    (an early proof settles an occurrence that is still ahead: it is never planned twice)."""
    latest = await (
        TaskInstance.filter(task_id=task.id)
        .exclude(status__in=(InstanceStatus.PENDING, InstanceStatus.CANCELED))
        .order_by("-due_at")
        .first()
    )
    return max(now, latest.due_at) if latest is not None else now


async def _due_earlier(task: Task, after: datetime, now: datetime, timing: ChainTiming) -> bool:
    """Whether the first due time after `after`, around the breaks left, comes before the open instance's."""
    current = await TaskInstance.filter(task_id=task.id, status=InstanceStatus.PENDING).first()
    spans = (await break_spans([task], now)).get(str(task.id), [])
    due = await next_due_after(task, after, timing.recurrence)
    first = await first_due_outside(task, due, spans, timing.recurrence)
    if current is None or first is None:
        return False
    return first < current.due_at


async def breaks_ahead(task_ids: list[str], now: datetime) -> dict[str, list[TaskBreak]]:
    """The breaks of each task that are not over, earliest first (one statement)."""
    found: dict[str, list[TaskBreak]] = {task_id: [] for task_id in task_ids}
    rows = await TaskBreak.filter(task_id__in=task_ids, ends_at__gt=now).order_by("applies_from")
    for row in rows:
        found[str(row.task_id)].append(row)
    return found


async def upcoming_outside_breaks(
    task: Task, after: datetime, count: int, timing: ChainTiming
) -> list[datetime]:
    """Task.upcoming: the next `count` due times, those inside a break left out (a break jumps to its end,
    so a long one costs one expansion, not one per skipped occurrence)."""
    schedule = schedule_of(task)
    if not has_breaks_ahead(task, after):
        return list((await due_times_after(schedule, after, count, timing.recurrence)).times)
    spans = (await break_spans([task], after)).get(str(task.id), [])
    found: list[datetime] = []
    cursor = after
    # each round fills the list, runs out of rule, or jumps past one break: at most breaks + 2 rounds
    for _ in range(MAX_BREAKS_AHEAD + 2):
        wanted = count - len(found)
        times = (await due_times_after(schedule, cursor, wanted, timing.recurrence)).times
        jumped = False
        for at in times:
            span = covering(spans, at)
            if span is not None:
                cursor, jumped = span.ends_at - timedelta(microseconds=1), True
                break
            found.append(at)
        if len(found) >= count or (not jumped and len(times) < wanted):
            return found
        if not jumped:
            cursor = found[-1]
    return found

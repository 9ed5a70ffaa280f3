"""Task lifecycle: create, edit, pause, resume, delete — each touches one task and its open instance."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from models import (
    QuotaPeriod,
    ReviewTimeoutPolicy,
    Task,
    TaskInstance,
    TaskState,
    User,
    VerificationMethod,
)
from rules.horizon import Lifecycle, lifecycle_waits
from rules.recurrence import Schedule
from services.accounts import horizon_of
from services.chain import (
    ChainTiming,
    links_of,
    next_instance_row,
    plan_next_instance,
    send_links_after_commit,
)
from services.kit import (
    BadInput,
    Conflict,
    NotFound,
    ProofloopError,
    connection,
    db_now,
    is_sqlite,
    parse_id,
    write_transaction,
)
from services.partners import require_own_task
from services.reminders import (
    check_reminders,
    occurrence_of,
    offsets_of,
    plan_reminders_of,
    replan_open_reminders,
    stored,
)
from services.schedules import (
    DueTimes,
    check_schedule,
    known_schedule,
    next_due_after,
    prefetch_due_times,
    schedule_of,
)
from services.tasks.activity_rules import stored_activity_rule
from services.tasks.drafts import (
    ANY_ACTIVITY,
    COLUMN_RULES,
    DEFAULT_REVIEW_WINDOW_SECONDS,
    PartnerRuleDraft,
    TaskDraft,
    TaskPatch,
    check_description,
    check_given_rules,
    check_rules,
    check_title,
    quota_schedule,
    refuse_rules_of_other_methods,
)
from services.tasks.edits import apply_fields, before, delete_locked, pause_locked, replan, whole_seconds
from services.tasks.pending_change import Part, PendingChange, WaitingPart
from services.tasks.pending_changes import (
    apply_if_due,
    hold_change,
    pending_of,
    rule_of,
    schedule_parts,
    split_rules,
    waiting_schedule,
)
from services.tasks.quota_edits import check_quota_edit, settle_met_periods
from services.tasks.schedule_edits import DAY, plan_schedule_edit


@dataclass(frozen=True)
class CreatedTask:
    task: Task
    instance: TaskInstance | None  # its first instance; None when it ended at once (a one-off now past)


async def create_task_planned(
    owner: User, draft: TaskDraft, *, min_interval_seconds: int, timing: ChainTiming, max_tasks: int
) -> CreatedTask:
    """Create the task and plan its first instance in one transaction."""
    created, refusal = await create_tasks_planned(
        owner, [draft], min_interval_seconds=min_interval_seconds, timing=timing, max_tasks=max_tasks
    )
    if refusal is not None:
        raise refusal
    return created[0]


async def create_tasks_planned(
    owner: User, drafts: list[TaskDraft], *, min_interval_seconds: int, timing: ChainTiming, max_tasks: int
) -> tuple[list[CreatedTask], ProofloopError | None]:
    """Create `drafts` as if one after another, in one transaction: (those created, in order; the refusal
    that stopped the rest, or None). Each draft is checked before the owner's lock, as a lone create's
    would be, and the quota is counted in order: the first draft refused ends the list there."""
    checked: list[_CheckedDraft] = []
    refusal: ProofloopError | None = None
    for draft in drafts:
        try:
            checked.append(
                await _check_draft(
                    owner,
                    draft,
                    min_interval_seconds=min_interval_seconds,
                    timing=timing,
                    max_tasks=max_tasks,
                    ahead=len(checked),
                )
            )
        except ProofloopError as exc:
            refusal = exc
            break
    if not checked:
        return [], refusal
    async with write_transaction():
        # serializes this owner's creates, so two at once cannot both pass the quota
        await User.filter(id=owner.id).select_for_update().first()
        count, now = await _task_count_and_now(owner)  # a statement after the lock: it sees their commits
        room = max(0, max_tasks - count)
        if room < len(checked):
            checked, refusal = checked[:room], _over_quota(max_tasks)
        created = await _insert_planned(owner, checked, now=now, timing=timing)
    return created, refusal


@dataclass(frozen=True)
class _CheckedDraft:
    """A draft every check before the lock has passed, with its first due times computed."""

    draft: TaskDraft
    title: str
    description: str | None
    partner: PartnerRuleDraft | None
    due: DueTimes


async def _check_draft(
    owner: User,
    draft: TaskDraft,
    *,
    min_interval_seconds: int,
    timing: ChainTiming,
    max_tasks: int,
    ahead: int,
) -> _CheckedDraft:
    """`ahead`: the drafts of the same set checked before this one (counted against the quota)."""
    title = check_title(draft.title)
    description = check_description(draft.description)
    check_rules(draft)
    schedule = whole_seconds(draft.schedule)
    if draft.quota is not None:
        schedule = quota_schedule(schedule, draft.quota)
    checked = known_schedule(schedule, min_interval_seconds=min_interval_seconds, budget=timing.recurrence)
    if checked is None:
        await check_task_quota(owner, max_tasks, ahead)  # before the schedule's costlier validation
        checked = await check_schedule(
            schedule, min_interval_seconds=min_interval_seconds, budget=timing.recurrence
        )
    draft = replace(draft, schedule=checked)
    await check_reminders(draft.reminders, checked, timing.recurrence)
    due = await prefetch_due_times(draft.schedule, before(draft.schedule.starts_at), timing.recurrence)
    partner = draft.partner
    if draft.method is VerificationMethod.PARTNER and partner is None:
        partner = PartnerRuleDraft(DEFAULT_REVIEW_WINDOW_SECONDS, on_timeout=ReviewTimeoutPolicy.REJECT)
    if draft.method is VerificationMethod.INTEGRATION and draft.activity is None:
        draft = replace(draft, activity=ANY_ACTIVITY)
    return _CheckedDraft(draft, title, description, partner, due)


async def _insert_planned(
    owner: User, checked: list[_CheckedDraft], *, now: datetime, timing: ChainTiming
) -> list[CreatedTask]:
    """Inside the owner's locked transaction: the tasks and their first instances, one insert each (a
    set costs the statements of one), their reminders, and their links after commit."""
    created: list[CreatedTask] = []
    for n, c in enumerate(checked):
        draft = c.draft
        # a microsecond apart: lists ordered by creation show a set in its document's order
        created_at = now + timedelta(microseconds=n)
        task = Task(
            owner=owner,
            title=c.title,
            description=c.description,
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
            # a rule of another method never reaches here (drafts.refuse_rules_of_other_methods)
            gps_avoid=bool(draft.gps and draft.gps.avoid),
            gps_max_sample_gap_seconds=draft.gps.max_sample_gap_seconds
            if draft.gps and draft.gps.avoid
            else None,
            **{rule.column: draft.column_rules.get(rule) for rule in COLUMN_RULES},
            require_capture_time=draft.require_capture_time,
            review_window_seconds=c.partner.review_window_seconds if c.partner else None,
            review_on_timeout=c.partner.on_timeout if c.partner else None,
            activity_rule=stored_activity_rule(draft.activity) if draft.activity is not None else None,
            reminders=stored(draft.reminders),
            quota_count=draft.quota.count if draft.quota else None,
            quota_period=QuotaPeriod(draft.quota.period.value) if draft.quota else None,
            quota_week_start=draft.quota.week_start if draft.quota else None,
            quota_min_gap_seconds=draft.quota.min_gap_seconds if draft.quota else None,
            created_at=created_at,
            updated_at=created_at,
        )
        due_at = await next_due_after(task, max(before(task.starts_at), now), timing.recurrence, c.due)
        if due_at is None:
            task.state = TaskState.ENDED  # a one-off whose time has passed plans nothing and ends at once
            created.append(CreatedTask(task, None))
        else:
            created.append(CreatedTask(task, next_instance_row(task, due_at, now=now, timing=timing)))
    await Task.bulk_create([c.task for c in created])
    planned = [c.instance for c in created if c.instance is not None]
    if planned:
        await TaskInstance.bulk_create(planned)
        await plan_reminders_of(
            [(occurrence_of(i), offsets_of(c.task)) for c in created if (i := c.instance) is not None],
            now=now,
            link_horizon_seconds=timing.link_horizon_seconds,
        )
        send_links_after_commit(links_of(planned))
    return created


async def check_task_quota(owner: User, max_tasks: int, ahead: int = 0) -> None:
    if await Task.filter(owner_id=owner.id, deleted_at=None).count() + ahead >= max_tasks:
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


async def _owned_task_locked(owner: User, task_id: str, timing: ChainTiming) -> Task:
    """Lock the caller's own task for an edit (others' tasks are NOT_FOUND: never leak existence)."""
    found = await Task.filter(id=parse_id(task_id, "task"), deleted_at=None).select_for_update().first()
    task = await require_own_task(str(owner.id), found, "only the task's owner may change it")
    await apply_if_due(task, timing)  # a change whose moment has come applies before this edit is judged
    if task.deleted_at is not None:
        # its waiting deletion came due: this edit rolls back, and the pump's next tick applies it
        raise NotFound("no such task")
    return task


async def update_task(
    owner: User,
    task_id: str,
    patch: TaskPatch,
    *,
    min_interval_seconds: int,
    timing: ChainTiming,
    horizon_day: timedelta = DAY,
) -> Task:
    """Harder and neutral parts apply at once; easier parts wait out the owner's commitment horizon."""
    title = check_title(patch.title) if patch.title is not None else None
    description = check_description(patch.description)
    check_given_rules(patch)
    for _ in range(_SCHEDULE_ATTEMPTS):
        # the schedule is checked, split and expanded before the row lock, then re-read under it
        plan = await plan_schedule_edit(
            owner,
            task_id,
            patch.schedule,
            min_interval_seconds=min_interval_seconds,
            timing=timing,
            day=horizon_day,
        )
        await _check_reminders_of_update(owner, task_id, patch, plan.eventual or plan.now, timing)
        async with write_transaction():
            task = await _owned_task_locked(owner, task_id, timing)
            if not plan.fits(task, has_schedule=patch.schedule is not None):
                continue  # edited meanwhile: check the schedule it has now
            now_patch, later, touched = (
                split_rules(task, patch) if plan.waits else (patch, PendingChange(), frozenset[WaitingPart]())
            )
            later = later.joined(waiting_schedule(plan.later, plan.eventual))
            check_quota_edit(task, now_patch, later)
            touched |= schedule_parts(patch.schedule)
            await _apply_update(task, title, description, now_patch, plan.now, plan.due, timing)
            if not later.is_empty or task.pending_change:
                await hold_change(task, later, touched, now=await db_now(), horizon=plan.horizon)
            return task
    raise Conflict("the task's schedule kept changing during this update; try again")


_SCHEDULE_ATTEMPTS = 3


async def _check_reminders_of_update(
    owner: User, task_id: str, patch: TaskPatch, schedule: Schedule | None, timing: ChainTiming
) -> None:
    """The reminders the task will have, against the schedule it will have (either may change)."""
    if patch.reminders is None and schedule is None:
        return
    current = await Task.get_or_none(id=parse_id(task_id, "task"), deleted_at=None)
    if current is None or str(current.owner_id) != str(owner.id):
        return  # the locked read answers NOT_FOUND or FORBIDDEN without judging the input
    reminders = patch.reminders if patch.reminders is not None else tuple(offsets_of(current))
    await check_reminders(reminders, schedule or schedule_of(current), timing.recurrence)


async def _apply_update(
    task: Task,
    title: str | None,
    description: str | None,
    patch: TaskPatch,
    schedule: Schedule | None,
    due: DueTimes | None,
    timing: ChainTiming,
) -> None:
    refuse_rules_of_other_methods(task.method, patch, capture_given=patch.require_capture_time is not None)
    if patch.gps is not None and patch.gps.avoid != task.gps_avoid:
        raise BadInput("input.gps.avoid", "is fixed when the task is created: create another task")
    gap = patch.gps.max_sample_gap_seconds if patch.gps is not None else None
    if gap is not None and gap != task.gps_max_sample_gap_seconds:
        raise BadInput("input.gps.maxSampleGapSeconds", "is fixed when the task is created")
    before = rule_of(task)
    apply_fields(task, title, description, patch)
    if rule_of(task) != before:
        task.rule_revision += 1
    # rule changes apply in place: proofs read the rule from the task row when they arrive
    await task.save()
    if patch.quota_count is not None:
        await settle_met_periods([task], await db_now(), timing)
    if schedule is not None:
        await replan(task, schedule, timing, due)
    elif patch.reminders is not None:
        await replan_open_reminders(
            task, now=await db_now(), link_horizon_seconds=timing.link_horizon_seconds
        )


async def pause_task(owner: User, task_id: str, *, timing: ChainTiming, horizon_day: timedelta = DAY) -> Task:
    async with write_transaction():
        task = await _owned_task_locked(owner, task_id, timing)
        if task.state is TaskState.PAUSED:
            return task
        if task.state is not TaskState.ACTIVE:
            raise Conflict(f"a task in state {task.state.value} cannot be paused")
        now = await db_now()
        horizon = horizon_of(owner, now, horizon_day)
        if horizon > timedelta(0) and lifecycle_waits(Lifecycle.PAUSE, active=True):
            await hold_change(task, PendingChange(pause=True), frozenset(), now=now, horizon=horizon)
        else:
            await pause_locked(task, now)
    return task


async def resume_task(owner: User, task_id: str, *, timing: ChainTiming) -> Task:
    current = await Task.get_or_none(id=parse_id(task_id, "task"), deleted_at=None)
    due = None
    if current is not None and str(current.owner_id) == str(owner.id):
        due = await prefetch_due_times(schedule_of(current), before(current.starts_at), timing.recurrence)
    async with write_transaction():
        task = await _owned_task_locked(owner, task_id, timing)
        if task.state is TaskState.ACTIVE:
            if pending_of(task).pause:  # resuming is harder: a waiting pause is dropped
                await hold_change(
                    task, PendingChange(), frozenset({Part.PAUSE}), now=await db_now(), horizon=timedelta(0)
                )
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


async def delete_task(
    owner: User, task_id: str, *, timing: ChainTiming, horizon_day: timedelta = DAY
) -> Task | None:
    """Soft-delete (history and events keep resolving the task); an ACTIVE task's deletion waits out the
    owner's commitment horizon: then the task is returned, still there with its pending change."""
    async with write_transaction():
        task = await _owned_task_locked(owner, task_id, timing)
        now = await db_now()
        horizon = horizon_of(owner, now, horizon_day)
        if horizon > timedelta(0) and lifecycle_waits(
            Lifecycle.DELETE, active=task.state is TaskState.ACTIVE
        ):
            await hold_change(task, PendingChange(delete=True), frozenset(), now=now, horizon=horizon)
            return task
        await delete_locked(task, now)
    return None


async def cancel_pending_change(owner: User, task_id: str, *, timing: ChainTiming) -> Task:
    """The owner drops what waits (a change that came due applies first, as on every edit)."""
    async with write_transaction():
        task = await _owned_task_locked(owner, task_id, timing)
        if task.pending_change is not None:
            task.pending_change, task.pending_effective_at = None, None
            await task.save(update_fields=["pending_change", "pending_effective_at", "updated_at"])
    return task

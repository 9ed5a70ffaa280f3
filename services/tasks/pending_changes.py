"""Easier task edits waiting out the owner's commitment horizon, and applying them when it has passed.

A task's pending change (tasks.pending_change, read and written as a `PendingChange`,
services/tasks/pending_change.py) holds the values it will set and the flags `pause` and `delete`;
tasks.pending_effective_at says when. rules/horizon.py decides which parts of an edit wait. A mixed edit
is split: its harder (and neutral) parts apply at once, its easier parts wait. The latest edit of a field
wins: editing a field again drops its pending value, and if the new value is easier it waits in its
place. A pending change that gains or changes anything waits a full horizon again from that edit (the
whole change, merged). At effective_at the chain applies it through the normal edit path
(services/tasks/edits.py): first whoever locks the task to decide about it (a proof, a review, an appeal,
an edit: `lock_with_due_change`; a fire reports the change due and its actor applies it), else its
message (services/tasks/pending_delivery.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from models import ReviewTimeoutPolicy, Task, TaskState
from rules.horizon import Field, PartnerReview, RuleField, Value, makes_easier, waiting_fields
from rules.recurrence import Schedule
from services.chain import ChainTiming, lock_task
from services.kit import db_now
from services.schedules import DueTimes, prefetch_many
from services.tasks.activity_rules import activity_rule_of
from services.tasks.drafts import COLUMN_RULES, GpsRuleDraft, SchedulePatch, TaskPatch
from services.tasks.edits import Replan, apply_fields, before, delete_all, pause_all, replan_all
from services.tasks.pending_change import (
    GPS_PARTS,
    RULE_PARTS,
    Part,
    PendingChange,
    WaitingPart,
    WaitingShape,
)
from services.tasks.quota_edits import settle_met_periods

log = logging.getLogger("proofloop.pending_changes")


def pending_of(task: Task) -> PendingChange:
    return PendingChange.read(task.pending_change)


def split_schedule(
    current: Schedule, patch: SchedulePatch, *, occurrences_wait: bool, avoid: bool = False
) -> tuple[SchedulePatch | None, SchedulePatch | None]:
    """(the part applied at once, the part that waits) of a schedule edit; `avoid`: a place to stay away
    from for the window, which a shorter window makes easier."""
    window_waits = patch.window_seconds is not None and makes_easier(
        RuleField.WINDOW,
        _window_value(current.window_seconds, avoid=avoid),
        _window_value(patch.window_seconds, avoid=avoid),
    )
    grace_waits = patch.grace_seconds is not None and makes_easier(
        RuleField.GRACE, current.grace_seconds, patch.grace_seconds
    )
    shape = {"starts_at": patch.starts_at, "rrule": patch.rrule, "rrule_set": patch.rrule_set}
    no_shape = {"starts_at": None, "rrule": None, "rrule_set": False}
    now = SchedulePatch(
        **(no_shape if occurrences_wait else shape),
        timezone=None if occurrences_wait else patch.timezone,
        window_seconds=None if window_waits else patch.window_seconds,
        grace_seconds=None if grace_waits else patch.grace_seconds,
    )
    later = SchedulePatch(
        **(shape if occurrences_wait else no_shape),
        timezone=patch.timezone if occurrences_wait else None,
        window_seconds=patch.window_seconds if window_waits else None,
        grace_seconds=patch.grace_seconds if grace_waits else None,
    )
    empty = SchedulePatch()
    return (None if now == empty else now), (None if later == empty else later)


def pending_schedule_patch(pending: PendingChange) -> SchedulePatch:
    """The schedule fields a pending change will set, as a patch over the task's."""
    shape = pending.shape
    return SchedulePatch(
        starts_at=shape.starts_at if shape else None,
        rrule=shape.rrule if shape else None,
        rrule_set=shape is not None,
        timezone=shape.timezone if shape else None,
        window_seconds=pending.window_seconds,
        grace_seconds=pending.grace_seconds,
    )


def merged_schedule_patch(pending: PendingChange, patch: SchedulePatch | None) -> SchedulePatch:
    """The pending schedule fields with the patch's given fields over them: where the task ends up."""
    base = pending_schedule_patch(pending)
    if patch is None:
        return base
    shape_given = patch.starts_at is not None or patch.rrule_set or patch.timezone is not None
    return SchedulePatch(
        starts_at=patch.starts_at if shape_given else base.starts_at,
        rrule=patch.rrule if patch.rrule_set else (None if shape_given else base.rrule),
        rrule_set=patch.rrule_set or (base.rrule_set and not shape_given),
        timezone=patch.timezone if shape_given else base.timezone,
        window_seconds=patch.window_seconds if patch.window_seconds is not None else base.window_seconds,
        grace_seconds=patch.grace_seconds if patch.grace_seconds is not None else base.grace_seconds,
    )


def schedule_parts(patch: SchedulePatch | None) -> frozenset[Part]:
    """The waiting parts an edit of the schedule supersedes (the shape counts as one)."""
    if patch is None:
        return frozenset()
    parts: set[Part] = set()
    if patch.starts_at is not None or patch.rrule_set or patch.timezone is not None:
        parts.add(Part.SHAPE)
    if patch.window_seconds is not None:
        parts.add(Part.WINDOW)
    if patch.grace_seconds is not None:
        parts.add(Part.GRACE)
    return frozenset(parts)


def waiting_schedule(later: SchedulePatch | None, eventual: Schedule | None) -> PendingChange:
    """The waiting schedule part of an edit; the shape's values come checked from `eventual`."""
    if later is None or eventual is None:
        return PendingChange()
    shape = None
    if later.starts_at is not None or later.rrule_set or later.timezone is not None:
        shape = WaitingShape(eventual.starts_at, eventual.rrule, eventual.timezone, eventual.count_ends_at)
    return PendingChange(shape=shape, window_seconds=later.window_seconds, grace_seconds=later.grace_seconds)


def _rule_values(task: Task) -> dict[Field, Value]:
    values: dict[Field, Value] = {}
    if task.gps_latitude is not None and task.gps_longitude is not None:
        values[RuleField.GPS_CENTER] = (task.gps_latitude, task.gps_longitude)
    if task.gps_radius_meters is not None:
        values[RuleField.GPS_RADIUS] = _radius_value(task.gps_radius_meters, avoid=task.gps_avoid)
    if task.gps_max_accuracy_meters is not None:
        values[RuleField.GPS_ACCURACY] = task.gps_max_accuracy_meters
    for rule in COLUMN_RULES:
        if (value := getattr(task, rule.column)) is not None:
            values[rule.horizon_field] = value
    if task.review_window_seconds is not None and task.review_on_timeout is not None:
        values[RuleField.PARTNER_REVIEW] = PartnerReview(
            task.review_window_seconds, task.review_on_timeout is ReviewTimeoutPolicy.APPROVE
        )
    if (activity := activity_rule_of(task)) is not None:
        values[RuleField.ACTIVITY] = activity
    values[RuleField.CAPTURE_TIME] = float(task.require_capture_time)
    if task.quota_count is not None:
        values[RuleField.QUOTA_COUNT] = task.quota_count
        values[RuleField.QUOTA_MIN_GAP] = task.quota_min_gap_seconds or 0
    return values


def _window_value(window_seconds: int, *, avoid: bool) -> float:
    """The window as the horizon compares it (larger is easier): staying away, a shorter one is."""
    return -window_seconds if avoid else window_seconds


def _radius_value(radius_meters: float, *, avoid: bool) -> float:
    """The radius as the horizon compares it (larger is easier): for a place to avoid, a smaller one is."""
    return -radius_meters if avoid else radius_meters


def _proposed_values(patch: TaskPatch, *, avoid: bool) -> dict[Field, Value]:
    values: dict[Field, Value] = {}
    if patch.gps is not None:
        values[RuleField.GPS_CENTER] = (patch.gps.latitude, patch.gps.longitude)
        values[RuleField.GPS_RADIUS] = _radius_value(patch.gps.radius_meters, avoid=avoid)
        values[RuleField.GPS_ACCURACY] = patch.gps.max_accuracy_meters
    for rule, value in patch.column_rules.items():
        values[rule.horizon_field] = value
    if patch.partner is not None:
        values[RuleField.PARTNER_REVIEW] = PartnerReview(
            patch.partner.review_window_seconds, patch.partner.on_timeout is ReviewTimeoutPolicy.APPROVE
        )
    if patch.activity is not None:
        values[RuleField.ACTIVITY] = patch.activity
    if patch.require_capture_time is not None:
        values[RuleField.CAPTURE_TIME] = float(patch.require_capture_time)
    if patch.quota_count is not None:
        values[RuleField.QUOTA_COUNT] = patch.quota_count
    if patch.quota_min_gap_seconds is not None:
        values[RuleField.QUOTA_MIN_GAP] = patch.quota_min_gap_seconds
    return values


@dataclass(frozen=True)
class _ScalarRule:
    """A rule that is one field of an edit: it applies at once or waits as a whole."""

    field: RuleField
    part: Part
    patch_field: str  # on TaskPatch
    pending_field: str  # on PendingChange
    waiting_value: Callable[[Any], Any] = lambda value: value  # what the pending change keeps of it


# every rule but the geofence (whose three parts wait apart) and the proof kinds' one-number rules
# (drafts.COLUMN_RULES, each its own part): one row per rule, read by split_rules
_SCALAR_RULES = (
    _ScalarRule(RuleField.PARTNER_REVIEW, Part.PARTNER_REVIEW, "partner", "partner_review"),
    _ScalarRule(RuleField.ACTIVITY, Part.ACTIVITY, "activity", "activity_rule"),
    # only dropping the requirement is easier, so what waits is always "optional"
    _ScalarRule(
        RuleField.CAPTURE_TIME,
        Part.CAPTURE_OPTIONAL,
        "require_capture_time",
        "capture_time_optional",
        lambda _: True,
    ),
    _ScalarRule(RuleField.QUOTA_COUNT, Part.QUOTA_COUNT, "quota_count", "quota_count"),
    _ScalarRule(
        RuleField.QUOTA_MIN_GAP, Part.QUOTA_MIN_GAP, "quota_min_gap_seconds", "quota_min_gap_seconds"
    ),
)


def split_rules(task: Task, patch: TaskPatch) -> tuple[TaskPatch, PendingChange, frozenset[WaitingPart]]:
    """The rule part of an edit (gps, video, partner review): (applied at once, what waits, the waiting
    parts it supersedes). A rule the task does not have passes through to be refused."""
    waiting = waiting_fields(_rule_values(task), _proposed_values(patch, avoid=task.gps_avoid))
    later = PendingChange()
    touched: set[WaitingPart] = set(patch.column_rules)
    gps = patch.gps
    if gps is not None:
        touched.update(GPS_PARTS)
        lat, lon = gps.latitude, gps.longitude
        if RuleField.GPS_CENTER in waiting:
            later = replace(later, gps_center=(lat, lon))
            lat, lon = task.gps_latitude or 0.0, task.gps_longitude or 0.0
        radius, accuracy = gps.radius_meters, gps.max_accuracy_meters
        if RuleField.GPS_RADIUS in waiting:
            later = replace(later, gps_radius_meters=radius)
            radius = task.gps_radius_meters or radius
        if RuleField.GPS_ACCURACY in waiting:
            later = replace(later, gps_max_accuracy_meters=accuracy)
            accuracy = task.gps_max_accuracy_meters or accuracy
        gps = GpsRuleDraft(lat, lon, radius, accuracy, gps.avoid, gps.max_sample_gap_seconds)
    at_once: dict[str, Any] = {}
    for rule in _SCALAR_RULES:
        value = getattr(patch, rule.patch_field)
        if value is None:
            continue
        touched.add(rule.part)
        if rule.field in waiting:
            later = replace(later, **{rule.pending_field: rule.waiting_value(value)})
            at_once[rule.patch_field] = None
    columns_now = {r: v for r, v in patch.column_rules.items() if r.horizon_field not in waiting}
    columns_later = {r: v for r, v in patch.column_rules.items() if r.horizon_field in waiting}
    later = replace(later, column_rules=columns_later)
    now = replace(patch, gps=gps, column_rules=columns_now, **at_once)
    return now, later, frozenset(touched)


async def hold_change(
    task: Task, later: PendingChange, touched: frozenset[WaitingPart], *, now: datetime, horizon: timedelta
) -> None:
    """Merge an edit into the task's pending change: drop what it superseded, add what waits. A change
    that gains or changes anything waits a full horizon again from this edit."""
    kept = pending_of(task).without(touched)
    merged = kept.joined(later)
    task.pending_change = merged.columns()
    if merged.is_empty:
        task.pending_effective_at = None
    elif kept.gains(later) or task.pending_effective_at is None:
        task.pending_effective_at = now + horizon
    await task.save(update_fields=["pending_change", "pending_effective_at", "updated_at"])


def eventual_schedule(task: Task, pending: PendingChange) -> Schedule:
    """The task's schedule once its pending change applies (the shape's COUNT end was found when held)."""
    shape = pending.shape
    return Schedule(
        starts_at=shape.starts_at if shape else task.starts_at,
        rrule=shape.rrule if shape else task.rrule,
        timezone=shape.timezone if shape else task.timezone,
        window_seconds=task.window_seconds if pending.window_seconds is None else pending.window_seconds,
        grace_seconds=task.grace_seconds if pending.grace_seconds is None else pending.grace_seconds,
        count_ends_at=shape.count_ends_at if shape else task.count_ends_at,
    )


async def eventual_due_times(tasks: list[Task], timing: ChainTiming) -> dict[str, DueTimes]:
    """The due times each re-planning change will plan from, by task id, expanded before the row lock,
    as every planning step does."""
    wanted: dict[str, tuple[Schedule, datetime]] = {}
    for task in tasks:
        pending = pending_of(task)
        if pending.touches_schedule:
            schedule = eventual_schedule(task, pending)
            wanted[str(task.id)] = (schedule, before(schedule.starts_at))
    if not wanted:
        return {}
    found = await prefetch_many(list(wanted.values()), timing.recurrence)
    return {task_id: found[pair] for task_id, pair in wanted.items()}


def _rule_patch(task: Task, pending: PendingChange) -> TaskPatch:
    gps = None
    if pending.parts() & GPS_PARTS:
        lat, lon = pending.gps_center or (task.gps_latitude or 0.0, task.gps_longitude or 0.0)
        radius, accuracy = pending.gps_radius_meters, pending.gps_max_accuracy_meters
        gps = GpsRuleDraft(
            float(lat),
            float(lon),
            float(task.gps_radius_meters or 0.0 if radius is None else radius),
            float(task.gps_max_accuracy_meters or 0.0 if accuracy is None else accuracy),
            task.gps_avoid,
            task.gps_max_sample_gap_seconds,
        )
    return TaskPatch(
        gps=gps,
        partner=pending.partner_review,
        activity=pending.activity_rule,
        require_capture_time=False if pending.capture_time_optional else None,
        quota_count=pending.quota_count,
        quota_min_gap_seconds=pending.quota_min_gap_seconds,
        column_rules=pending.column_rules,
    )


# The task columns a waiting rule change sets in place (the open instance reads them when a proof comes).
_RULE_COLUMNS = [
    "gps_latitude",
    "gps_longitude",
    "gps_radius_meters",
    "gps_max_accuracy_meters",
    *(rule.column for rule in COLUMN_RULES),
    "review_window_seconds",
    "review_on_timeout",
    "activity_rule",
    "require_capture_time",
    "quota_count",
    "quota_min_gap_seconds",
    "rule_revision",
    "updated_at",
]


def rule_of(task: Task) -> tuple[object, ...]:
    """How the task judges its instances, for telling whether an edit changed it (a new rule_revision)."""
    return tuple(getattr(task, column) for column in _RULE_COLUMNS[:-2])


async def apply_pending_change(
    task: Task, now: datetime, timing: ChainTiming, due: DueTimes | None = None
) -> None:
    """Apply the locked task's pending change through the normal edit path, and clear it."""
    await apply_pending_changes([task], now, timing, {str(task.id): due} if due is not None else {})


async def apply_pending_changes(
    tasks: list[Task], now: datetime, timing: ChainTiming, due: Mapping[str, DueTimes]
) -> None:
    """Apply the locked tasks' pending changes and clear them, as a set: the same edit steps in a fixed
    number of statements however many tasks (deletes, rules in place, re-plans, then pauses). `due`: the
    due times of each re-planned task's eventual schedule, expanded before the lock."""
    changes = [(task, pending_of(task)) for task in tasks if task.pending_change]
    if not changes:
        return
    await Task.filter(id__in=[task.id for task, _ in changes]).update(
        pending_change=None, pending_effective_at=None, updated_at=now
    )
    for task, _ in changes:
        task.pending_change, task.pending_effective_at, task.updated_at = None, None, now
    await delete_all([task for task, pending in changes if pending.delete], now)
    kept = [(task, pending) for task, pending in changes if not pending.delete]
    ruled = [task for task, pending in kept if pending.parts() & RULE_PARTS]
    for task, pending in kept:
        before = rule_of(task)
        apply_fields(task, None, None, _rule_patch(task, pending))
        if rule_of(task) != before:
            task.rule_revision += 1
    if ruled:
        await Task.bulk_update(ruled, fields=_RULE_COLUMNS)
    await settle_met_periods([task for task, pending in kept if pending.quota_count is not None], now, timing)
    # a schedule change cancels and re-plans; a rule change applies in place to the open instance
    replans = [
        Replan(task, eventual_schedule(task, pending), due.get(str(task.id)))
        for task, pending in kept
        if pending.touches_schedule
    ]
    await replan_all(replans, now, timing)
    await pause_all([task for task, pending in kept if pending.pause and task.state is TaskState.ACTIVE], now)
    for task, pending in changes:
        log.info("pending change applied", extra={"task_id": str(task.id), "changed": pending.part_names()})


def is_due(task: Task, now: datetime) -> bool:
    return task.pending_effective_at is not None and task.pending_effective_at <= now


async def apply_if_due(task: Task, timing: ChainTiming) -> None:
    """On a path that has just locked the task: a change whose moment has come applies before anything
    is decided about the task (a column check on the locked row when nothing is pending)."""
    if task.pending_effective_at is None:
        return
    now = await db_now()
    if is_due(task, now):
        await apply_pending_change(task, now, timing)


async def lock_with_due_change(task_id: str, timing: ChainTiming) -> Task:
    """chain.lock_task for a path that then decides about the task (a proof, a review, an appeal): a
    change that came due applies first, in the same transaction, so the decision meets the new rules."""
    task = await lock_task(task_id)
    await apply_if_due(task, timing)
    return task

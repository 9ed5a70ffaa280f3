"""Tasks: the lifecycle (create, edit, pause, resume, delete), drafts and edits, reads, pending changes
that wait out the commitment horizon, and the pump tick that hands timers over."""

from __future__ import annotations

from services.tasks.activity_rules import activity_rule, activity_rule_of
from services.tasks.breaks import (
    MAX_BREAKS_AHEAD,
    BreakRequest,
    breaks_ahead,
    end_break,
    schedule_break,
    upcoming_outside_breaks,
)
from services.tasks.dev_clock import MAX_DUE_IN_SECONDS, advance_task
from services.tasks.drafts import (
    COLUMN_RULES,
    DEFAULT_REVIEW_WINDOW_SECONDS,
    ColumnRule,
    ColumnValues,
    GpsRuleDraft,
    PartnerRuleDraft,
    SchedulePatch,
    TaskDraft,
    TaskPatch,
    check_schedule_text,
)
from services.tasks.home_screen import AGENDA_ORDER, MAX_AGENDA_DAYS, agenda, due_today
from services.tasks.pending_change import GPS_PARTS, Part, PendingChange, WaitingShape
from services.tasks.pending_changes import lock_with_due_change
from services.tasks.pending_delivery import (
    APPLY_ACTOR,
    apply_changes_before_links,
    apply_changes_of,
    apply_due_change_before_proof,
)
from services.tasks.pump import pump_once
from services.tasks.reads import (
    INSTANCE_ORDER,
    TASK_ORDER,
    VERIFICATION_ORDER,
    InstanceCount,
    InstancePage,
    instance_counts,
    instance_pages,
    open_instances,
)
from services.tasks.zone_moves import RefusedMove, ZoneMoves, move_tasks_to_zone

__all__ = [
    "AGENDA_ORDER",
    "APPLY_ACTOR",
    "COLUMN_RULES",
    "DEFAULT_REVIEW_WINDOW_SECONDS",
    "GPS_PARTS",
    "INSTANCE_ORDER",
    "MAX_AGENDA_DAYS",
    "MAX_BREAKS_AHEAD",
    "MAX_DUE_IN_SECONDS",
    "TASK_ORDER",
    "VERIFICATION_ORDER",
    "BreakRequest",
    "ColumnRule",
    "ColumnValues",
    "GpsRuleDraft",
    "InstanceCount",
    "InstancePage",
    "Part",
    "PartnerRuleDraft",
    "PendingChange",
    "RefusedMove",
    "SchedulePatch",
    "TaskDraft",
    "TaskPatch",
    "WaitingShape",
    "ZoneMoves",
    "activity_rule",
    "activity_rule_of",
    "advance_task",
    "agenda",
    "apply_changes_before_links",
    "apply_changes_of",
    "apply_due_change_before_proof",
    "breaks_ahead",
    "check_schedule_text",
    "due_today",
    "end_break",
    "instance_counts",
    "instance_pages",
    "lock_with_due_change",
    "move_tasks_to_zone",
    "open_instances",
    "pump_once",
    "schedule_break",
    "upcoming_outside_breaks",
]

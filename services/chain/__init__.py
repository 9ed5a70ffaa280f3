"""The per-task chain: plan an instance, settle it at its fire_at (row by row or as a set, on both SQL
dialects), and keep its link alive."""

from __future__ import annotations

from services.chain.avoidance import DEFAULT_MAX_SAMPLE_GAP_SECONDS
from services.chain.batch import settle_links
from services.chain.breaks import break_spans, first_due_outside, has_breaks_ahead
from services.chain.chain import (
    OPEN_STATUSES,
    ChainTiming,
    NextPlan,
    cancel_open_instances,
    count_proof,
    decided_event,
    decided_reason,
    decided_status,
    links_of,
    lock_task,
    move_fire_at,
    next_instance_row,
    plan_after_pending,
    plan_next_instance,
    plan_next_instances,
    send_links,
    settle_instance,
)
from services.chain.links import FIRE_ACTOR, FIRE_BATCH_ACTOR, send_links_after_commit
from services.chain.quota import far_enough_from_last, is_quota

__all__ = [
    "DEFAULT_MAX_SAMPLE_GAP_SECONDS",
    "FIRE_ACTOR",
    "FIRE_BATCH_ACTOR",
    "OPEN_STATUSES",
    "ChainTiming",
    "NextPlan",
    "break_spans",
    "cancel_open_instances",
    "count_proof",
    "decided_event",
    "decided_reason",
    "decided_status",
    "far_enough_from_last",
    "first_due_outside",
    "has_breaks_ahead",
    "is_quota",
    "links_of",
    "lock_task",
    "move_fire_at",
    "next_instance_row",
    "plan_after_pending",
    "plan_next_instance",
    "plan_next_instances",
    "send_links",
    "send_links_after_commit",
    "settle_instance",
    "settle_links",
]

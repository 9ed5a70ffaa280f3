"""Reminders: a task's offsets, planned per instance as durable timers, fired one by one or as a set."""

from __future__ import annotations

from services.reminders.links import claim_due_reminders
from services.reminders.reminders import (
    FIRE_ACTOR,
    FIRE_BATCH_ACTOR,
    Occurrence,
    ReminderOffset,
    check_reminders,
    occurrence_of,
    offsets_from,
    offsets_of,
    plan_reminders,
    plan_reminders_of,
    replan_open_reminders,
    stored,
)
from services.reminders.sets import fire_reminder_links

__all__ = [
    "FIRE_ACTOR",
    "FIRE_BATCH_ACTOR",
    "Occurrence",
    "ReminderOffset",
    "check_reminders",
    "claim_due_reminders",
    "fire_reminder_links",
    "occurrence_of",
    "offsets_from",
    "offsets_of",
    "plan_reminders",
    "plan_reminders_of",
    "replan_open_reminders",
    "stored",
]

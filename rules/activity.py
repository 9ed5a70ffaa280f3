"""Activity proofs: what an integration reports (a run, a session, a build) judged against a task's rule.

An activity counts when it is of a listed type (none listed: any), lasted and covered at least the rule's
minimums, and happened (ended) inside the instance's window. Types compare case-folded, trimmed, with runs of
spaces as one, so "Run" from one connector and "run " from another are the same activity.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rules.window import in_window

MAX_ACTIVITY_TYPES = 20
MAX_ACTIVITY_TYPE = 64
# Physical bounds: no activity is longer than a week or farther than a quarter of the way round the Earth.
MAX_DURATION_SECONDS = 7 * 24 * 3600.0
MAX_DISTANCE_METERS = 10_000_000.0


@dataclass(frozen=True)
class ActivityRule:
    activity_types: frozenset[str]  # normalized (activity_type); empty: any type counts
    min_duration_seconds: float = 0.0
    min_distance_meters: float = 0.0


@dataclass(frozen=True)
class Activity:
    occurred_at: datetime
    activity_type: str | None = None  # normalized
    duration_seconds: float | None = None
    distance_meters: float | None = None


def activity_type(text: str) -> str:
    """The one spelling an activity type is compared and stored in: case folded ("Straße" is
    "STRASSE"), runs of spaces as one ("trail  run" is "trail run")."""
    return " ".join(text.casefold().split())


def judge_activity(
    rule: ActivityRule, activity: Activity, opens_at: datetime, closes_at: datetime
) -> str | None:
    """The first rule the activity breaks (a RejectionReason's name), or None when it counts."""
    if not in_window(activity.occurred_at, opens_at, closes_at):
        return "OCCURRED_OUTSIDE_WINDOW"
    if rule.activity_types and activity.activity_type not in rule.activity_types:
        return "ACTIVITY_MISMATCH"
    if rule.min_duration_seconds > 0 and (activity.duration_seconds or 0.0) < rule.min_duration_seconds:
        return "TOO_SHORT"
    if rule.min_distance_meters > 0 and (activity.distance_meters or 0.0) < rule.min_distance_meters:
        return "BELOW_MIN_DISTANCE"
    return None


def activity_rule_easier(old: ActivityRule, new: ActivityRule) -> bool:
    """Whether `new` accepts an activity `old` would refuse: another type, a lower minimum."""
    # no types listed means any type counts: from a list to none, or to a type not listed, widens it
    widened = bool(old.activity_types) and (
        not new.activity_types or not new.activity_types <= old.activity_types
    )
    return (
        widened
        or new.min_duration_seconds < old.min_duration_seconds
        or new.min_distance_meters < old.min_distance_meters
    )

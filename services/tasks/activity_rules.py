"""An INTEGRATION task's activity rule: checked when a client sets it, stored on tasks.activity_rule
(these functions alone spell its keys), read back by the proofs that judge against it."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from models import Task
from rules.activity import (
    MAX_ACTIVITY_TYPE,
    MAX_ACTIVITY_TYPES,
    MAX_DISTANCE_METERS,
    MAX_DURATION_SECONDS,
    ActivityRule,
    activity_type,
)
from services.kit import BadInput

FIELD = "input.integration"


def activity_rule(
    activity_types: Iterable[str], min_duration_seconds: float, min_distance_meters: float
) -> ActivityRule:
    """A client's rule, checked: at most 20 types of 1 to 64 characters, minimums within physical bounds."""
    given = list(activity_types)
    if len(given) > MAX_ACTIVITY_TYPES:
        raise BadInput(f"{FIELD}.activityTypes", f"must list at most {MAX_ACTIVITY_TYPES} types")
    types = frozenset(activity_type(t) for t in given)
    if any(not 1 <= len(t) <= MAX_ACTIVITY_TYPE for t in types):
        raise BadInput(f"{FIELD}.activityTypes", f"each type must be 1 to {MAX_ACTIVITY_TYPE} characters")
    if not (math.isfinite(min_duration_seconds) and 0 <= min_duration_seconds <= MAX_DURATION_SECONDS):
        raise BadInput(f"{FIELD}.minDurationSeconds", f"must be 0 to {MAX_DURATION_SECONDS:.0f}")
    if not (math.isfinite(min_distance_meters) and 0 <= min_distance_meters <= MAX_DISTANCE_METERS):
        raise BadInput(f"{FIELD}.minDistanceMeters", f"must be 0 to {MAX_DISTANCE_METERS:.0f}")
    return ActivityRule(types, float(min_duration_seconds), float(min_distance_meters))


def stored_activity_rule(rule: ActivityRule) -> dict[str, object]:
    return {
        "activity_types": sorted(rule.activity_types),
        "min_duration_seconds": rule.min_duration_seconds,
        "min_distance_meters": rule.min_distance_meters,
    }


def read_activity_rule(stored: Mapping[str, object]) -> ActivityRule:
    types = stored.get("activity_types")
    duration, distance = stored.get("min_duration_seconds"), stored.get("min_distance_meters")
    return ActivityRule(
        frozenset(str(t) for t in types) if isinstance(types, list) else frozenset(),
        float(duration) if isinstance(duration, int | float) else 0.0,
        float(distance) if isinstance(distance, int | float) else 0.0,
    )


def activity_rule_of(task: Task) -> ActivityRule | None:
    """The task's rule (None: not an INTEGRATION task)."""
    return read_activity_rule(task.activity_rule) if task.activity_rule is not None else None

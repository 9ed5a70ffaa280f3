"""The commitment horizon's one rule: whether an edit makes a task easier (it waits) or not (at once).

"Easier" means more likely to end VERIFIED for the same effort. Each rule field is judged on its own,
old value against new; an unchanged value is never easier. A field this module does not know (title,
description) is never easier. The verification method cannot be edited, so it has no entry. A proof
kind's rule of one number is a `ScalarField` its kind declares (services/tasks/drafts.py `ColumnRule`),
with the direction that makes it easier, so a new kind adds no member here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from rules.activity import ActivityRule, activity_rule_easier


class RuleField(StrEnum):
    WINDOW = "window_seconds"
    GRACE = "grace_seconds"
    OCCURRENCES = "occurrences"  # startsAt, rrule and timezone together: when instances fall due
    GPS_CENTER = "gps_center"
    GPS_RADIUS = "gps_radius_meters"
    GPS_ACCURACY = "gps_max_accuracy_meters"
    PARTNER_REVIEW = "partner_review"
    ACTIVITY = "activity_rule"  # an INTEGRATION task's rule, judged as a whole
    CAPTURE_TIME = "require_capture_time"  # 1.0 required, 0.0 not
    QUOTA_COUNT = "quota_count"  # a quota goal's proofs per period
    QUOTA_MIN_GAP = "quota_min_gap_seconds"


@dataclass(frozen=True)
class ScalarField:
    """A rule of one number, named as its column, that is easier larger or smaller (a video's minimum
    duration: smaller)."""

    name: str
    larger_is_easier: bool


Field = RuleField | ScalarField


class Lifecycle(StrEnum):
    PAUSE = "PAUSE"
    DELETE = "DELETE"
    RESUME = "RESUME"


@dataclass(frozen=True)
class PartnerReview:
    window_seconds: int
    approve_on_timeout: bool


@dataclass(frozen=True)
class DueSpan:
    """What a schedule promises from now on: every due time within the horizon, and how long it goes on."""

    times: frozenset[datetime]  # all of them, not a sample
    continues: bool  # it has due times after the horizon
    last: datetime | None = None  # when it continues: its final due time (None: it never ends)


Value = float | tuple[float, float] | PartnerReview | ActivityRule | DueSpan

_LARGER_IS_EASIER = frozenset(
    {RuleField.WINDOW, RuleField.GRACE, RuleField.GPS_RADIUS, RuleField.GPS_ACCURACY}
)


def makes_easier(field: Field, old: Value, new: Value) -> bool:
    """Whether changing `field` from `old` to `new` makes the task easier."""
    if isinstance(field, ScalarField):
        assert isinstance(old, int | float)
        assert isinstance(new, int | float)
        return new > old if field.larger_is_easier else new < old
    if field in _LARGER_IS_EASIER:
        assert isinstance(old, int | float)
        assert isinstance(new, int | float)
        return new > old  # a longer window or grace, a bigger geofence, a vaguer fix allowed
    if field in (
        RuleField.CAPTURE_TIME,
        RuleField.QUOTA_COUNT,
        RuleField.QUOTA_MIN_GAP,
    ):
        assert isinstance(old, int | float)
        assert isinstance(new, int | float)
        return new < old
    if field is RuleField.GPS_CENTER:
        return new != old  # a moved geofence may be moved to where one already is
    if field is RuleField.PARTNER_REVIEW:
        assert isinstance(old, PartnerReview)
        assert isinstance(new, PartnerReview)
        return _review_easier(old, new)
    if field is RuleField.ACTIVITY:
        assert isinstance(old, ActivityRule)
        assert isinstance(new, ActivityRule)
        return activity_rule_easier(old, new)
    assert isinstance(old, DueSpan)
    assert isinstance(new, DueSpan)
    return _occurrences_easier(old, new)


def _review_easier(old: PartnerReview, new: PartnerReview) -> bool:
    if old.approve_on_timeout != new.approve_on_timeout:
        return new.approve_on_timeout
    if new.approve_on_timeout:
        return new.window_seconds < old.window_seconds  # the timeout approves sooner
    return new.window_seconds > old.window_seconds  # partners have longer to approve before it rejects


def _occurrences_easier(old: DueSpan, new: DueSpan) -> bool:
    """Easier unless every due time the old schedule promises within the horizon stays due and, when it
    goes on past the horizon, the new one goes on at least as long (a lower COUNT, an earlier UNTIL)."""
    if not old.times <= new.times:
        return True  # sparser, moved, or ending inside the horizon
    if not old.continues:
        return False
    if not new.continues:
        return True
    if new.last is None:
        return False
    return old.last is None or new.last < old.last


def lifecycle_waits(action: Lifecycle, *, active: bool) -> bool:
    """Pausing or deleting an ACTIVE task waits; resuming, and ending what owes nothing, do not."""
    return active and action in (Lifecycle.PAUSE, Lifecycle.DELETE)


def waiting_fields(current: Mapping[Field, Value], proposed: Mapping[Field, Value]) -> frozenset[Field]:
    """Of the proposed values, the fields whose change makes the task easier (a field with no current
    value is being set for the first time: never easier)."""
    return frozenset(
        field
        for field, new in proposed.items()
        if field in current and makes_easier(field, current[field], new)
    )

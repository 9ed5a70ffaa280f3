"""What a client asks a task to be: drafts and patches, and the rules each field must meet."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Protocol

from models import ReviewTimeoutPolicy, VerificationMethod
from rules.activity import ActivityRule
from rules.errors import InvalidInput
from rules.gps import validate_point
from rules.horizon import ScalarField
from rules.quota import Quota, boundary_rule, check_quota, first_period_end
from rules.recurrence import Schedule
from rules.shown_text import reordering_character
from rules.timezones import zone_of
from services.kit import BadInput
from services.reminders import ReminderOffset

MAX_TITLE = 200
MAX_DESCRIPTION = 5000
MAX_REVIEW_WINDOW = 30 * 24 * 3600
MAX_RRULE = 500
# Physical bounds: a geofence wider than a city proves nothing, and no phone fix is that vague.
MAX_RADIUS_METERS = 100_000.0
MAX_ACCURACY_METERS = 10_000.0
# avoid-a-place: samples at least this often (a phone's background updates manage a minute), at most
# an hour apart (longer says nothing about where someone was)
MIN_SAMPLE_GAP_SECONDS = 60
MAX_SAMPLE_GAP_SECONDS = 3600


@dataclass(frozen=True)
class GpsRuleDraft:
    latitude: float
    longitude: float
    radius_meters: float
    max_accuracy_meters: float
    avoid: bool = False  # fixed when the task is created
    max_sample_gap_seconds: int | None = None  # avoid: fixed when the task is created


# a PARTNER task's review window when none is given
DEFAULT_REVIEW_WINDOW_SECONDS = 86400
# an INTEGRATION task's rule when none is given: any signed activity inside the window proves it
ANY_ACTIVITY = ActivityRule(frozenset())


@dataclass(frozen=True)
class PartnerRuleDraft:
    review_window_seconds: int
    on_timeout: ReviewTimeoutPolicy


def check_video_rule(min_duration_seconds: float) -> None:
    if not 0 < _finite(min_duration_seconds, "input.video.minDurationSeconds") <= 3600:
        raise BadInput("input.video.minDurationSeconds", "must be greater than 0 and at most 3600")


class ColumnRule(Enum):
    """A proof kind's rule of one number, held in one `tasks` column: required when a task of its method
    is created, refused on a task of another method, checked (all here), stored on create and copied on
    edit as it is (tasks.py, edits.py), and, when an edit makes it easier (smaller, or larger with
    `larger_is_easier`), held under the horizon by the pending change, stored under the column's name
    (pending_change.py, pending_changes.py). Drafts, patches and pending changes carry its value keyed by
    the member, so the column is named here alone, and a new kind's rule is one member more."""

    # (column on Task, method, the input field errors name, check, larger_is_easier): a shorter minimum
    # is easier
    VIDEO_MIN_DURATION = (
        "video_min_duration_seconds",
        VerificationMethod.VIDEO,
        "input.video",
        check_video_rule,
        False,
    )

    def __init__(
        self,
        column: str,
        method: VerificationMethod,
        input: str,
        check: Callable[[float], None],
        larger_is_easier: bool,
    ) -> None:
        self.column = column
        self.method = method
        self.input = input
        self.check = check
        self.larger_is_easier = larger_is_easier

    @property
    def horizon_field(self) -> ScalarField:
        return ScalarField(self.column, self.larger_is_easier)


COLUMN_RULES = tuple(ColumnRule)
# what a draft, a patch or a pending change gives of them (a rule left out has no entry)
ColumnValues = Mapping[ColumnRule, float]


@dataclass(frozen=True)
class TaskDraft:
    title: str
    description: str | None
    method: VerificationMethod
    schedule: Schedule
    gps: GpsRuleDraft | None = None
    column_rules: ColumnValues = field(default_factory=dict)
    partner: PartnerRuleDraft | None = None
    activity: ActivityRule | None = None  # INTEGRATION (checked when the input is read)
    require_capture_time: bool = False  # PHOTO/VIDEO
    reminders: tuple[ReminderOffset, ...] = ()
    quota: Quota | None = None  # a quota goal: the schedule's periods replace its rule (quota_schedule)


@dataclass(frozen=True)
class SchedulePatch:
    starts_at: datetime | None = None
    rrule: str | None = None
    rrule_set: bool = False  # rrule may be set to null (one-off), so presence is explicit
    timezone: str | None = None
    window_seconds: int | None = None
    grace_seconds: int | None = None


@dataclass(frozen=True)
class TaskPatch:
    title: str | None = None
    description: str | None = None
    description_set: bool = False
    schedule: SchedulePatch | None = None
    gps: GpsRuleDraft | None = None
    column_rules: ColumnValues = field(default_factory=dict)  # the rules given (others keep theirs)
    partner: PartnerRuleDraft | None = None
    activity: ActivityRule | None = None
    require_capture_time: bool | None = None  # None keeps it
    reminders: tuple[ReminderOffset, ...] | None = None  # None keeps them; () removes them
    quota_count: int | None = None  # a quota goal's count (None keeps it)
    quota_min_gap_seconds: int | None = None


def check_schedule_text(rrule: str | None, timezone: str | None, field: str) -> None:
    """The cheap checks, before the recurrence engine (or the zone database) sees the schedule."""
    if rrule is not None and len(rrule) > MAX_RRULE:
        raise BadInput(f"{field}.rrule", f"must be at most {MAX_RRULE} characters")
    if timezone is not None:
        try:
            zone_of(timezone, f"{field}.timezone")
        except InvalidInput as exc:
            raise BadInput(exc.field, exc.message) from None


def check_title(title: str) -> str:
    title = title.strip()
    if not 1 <= len(title) <= MAX_TITLE:
        raise BadInput("input.title", f"must be 1 to {MAX_TITLE} characters")
    if (control := reordering_character(title)) is not None:
        raise BadInput("input.title", f"must not hold {control}, which reorders the text others see")
    return title


def check_description(description: str | None) -> str | None:
    if description is not None and len(description) > MAX_DESCRIPTION:
        raise BadInput("input.description", f"must be at most {MAX_DESCRIPTION} characters")
    return description


def _finite(value: float, field: str) -> float:
    if not math.isfinite(value):
        raise BadInput(field, "must be a finite number")
    return value


def check_gps_rule(rule: GpsRuleDraft) -> None:
    try:
        validate_point(rule.latitude, rule.longitude, "input.gps.center")
    except InvalidInput as exc:
        raise BadInput(exc.field, exc.message) from None
    if not 0 < _finite(rule.radius_meters, "input.gps.radiusMeters") <= MAX_RADIUS_METERS:
        raise BadInput(
            "input.gps.radiusMeters", f"must be greater than 0 and at most {MAX_RADIUS_METERS:.0f}"
        )
    if not 0 < _finite(rule.max_accuracy_meters, "input.gps.maxAccuracyMeters") <= MAX_ACCURACY_METERS:
        raise BadInput(
            "input.gps.maxAccuracyMeters", f"must be greater than 0 and at most {MAX_ACCURACY_METERS:.0f}"
        )
    gap = rule.max_sample_gap_seconds
    if gap is not None and not MIN_SAMPLE_GAP_SECONDS <= gap <= MAX_SAMPLE_GAP_SECONDS:
        raise BadInput(
            "input.gps.maxSampleGapSeconds", f"must be {MIN_SAMPLE_GAP_SECONDS} to {MAX_SAMPLE_GAP_SECONDS}"
        )
    if gap is not None and not rule.avoid:
        raise BadInput("input.gps.maxSampleGapSeconds", "applies only to an avoid rule (avoid: true)")


def quota_schedule(schedule: Schedule, quota: Quota) -> Schedule:
    """A quota goal's schedule: its periods' ends as the rule, from the end of the period startsAt falls
    in, each instance's window its whole period (rules/quota.py)."""
    field = "input.schedule"
    if schedule.rrule is not None:
        raise BadInput(f"{field}.rrule", "a quota goal recurs by its period: leave rrule out")
    if schedule.grace_seconds != 0:
        raise BadInput(f"{field}.graceSeconds", "a quota goal's period ends where the next begins: use 0")
    try:
        check_quota(quota, "input.quota")
    except InvalidInput as exc:
        raise BadInput(exc.field, exc.message) from None
    if not 1900 <= schedule.starts_at.year <= 9000:  # as every schedule; the period's end must exist too
        raise BadInput(f"{field}.startsAt", "startsAt must fall between the years 1900 and 9000")
    zone = zone_of(schedule.timezone, f"{field}.timezone")
    return Schedule(
        starts_at=first_period_end(schedule.starts_at, quota, zone),
        rrule=boundary_rule(quota),
        timezone=schedule.timezone,
        window_seconds=0,
        grace_seconds=0,
        period=quota.period,
    )


def check_partner_rule(rule: PartnerRuleDraft) -> None:
    if not 0 < rule.review_window_seconds <= MAX_REVIEW_WINDOW:
        raise BadInput(
            "input.partnerReview.reviewWindowSeconds", f"must be between 1 and {MAX_REVIEW_WINDOW} seconds"
        )


# the methods whose files may carry a capture time
CAPTURED_METHODS = (VerificationMethod.PHOTO, VerificationMethod.VIDEO)


class GivenRules(Protocol):
    """What a draft and a patch both carry of the method rules."""

    @property
    def gps(self) -> GpsRuleDraft | None: ...
    @property
    def column_rules(self) -> ColumnValues: ...
    @property
    def partner(self) -> PartnerRuleDraft | None: ...
    @property
    def activity(self) -> ActivityRule | None: ...


def refuse_rules_of_other_methods(
    method: VerificationMethod, given: GivenRules, *, capture_given: bool
) -> None:
    """A method's rule applies only to tasks of that method, on create as on update: a PHOTO task given a
    video rule is refused, never stored beside it. `capture_given`: the edit says whether a capture time
    is required (a draft only when it requires one)."""
    if given.gps is not None and method is not VerificationMethod.GPS:
        raise BadInput("input.gps", "applies only to GPS tasks")
    for rule in given.column_rules:
        if method is not rule.method:
            raise BadInput(rule.input, f"applies only to {rule.method.value} tasks")
    if given.partner is not None and method is not VerificationMethod.PARTNER:
        raise BadInput("input.partnerReview", "applies only to PARTNER tasks")
    if given.activity is not None and method is not VerificationMethod.INTEGRATION:
        raise BadInput("input.integration", "applies only to INTEGRATION tasks")
    if capture_given and method not in CAPTURED_METHODS:
        raise BadInput("input.photo", "applies only to PHOTO tasks (for a VIDEO task: input.video)")


def check_rules(draft: TaskDraft) -> None:
    if draft.method is VerificationMethod.GPS and draft.gps is None:
        raise BadInput("input.gps", "is required when method is GPS")
    if draft.quota is not None and draft.gps is not None and draft.gps.avoid:
        raise BadInput("input.quota", "an avoid-a-place rule has no proofs to count: leave quota out")
    for rule in COLUMN_RULES:
        if draft.method is rule.method and rule not in draft.column_rules:
            raise BadInput(rule.input, f"is required when method is {rule.method.value}")
    refuse_rules_of_other_methods(draft.method, draft, capture_given=draft.require_capture_time)
    check_given_rules(draft)


def check_given_rules(given: GivenRules) -> None:
    """The rules a create or an update carries (those left out keep their value and were checked)."""
    if given.gps is not None:
        check_gps_rule(given.gps)
    for rule, value in given.column_rules.items():
        rule.check(value)
    if given.partner is not None:
        check_partner_rule(given.partner)

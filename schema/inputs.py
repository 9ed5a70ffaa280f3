"""Input types of the contract, and their conversion to service drafts (with the field paths of errors)."""

from __future__ import annotations

from datetime import date, datetime

import strawberry

from models import ReminderAnchor as ReminderAnchorRow
from models import ReviewTimeoutPolicy as ReviewTimeoutPolicyRow
from rules.activity import ActivityRule
from rules.quota import MAX_COUNT as MAX_QUOTA_COUNT
from rules.quota import Period, Quota, default_min_gap_seconds
from rules.recurrence import Schedule
from schema.enums import QuotaPeriod, ReminderAnchor, ReviewTimeoutPolicy, VerificationMethod, Weekday
from schema.media_rules import MediaRulesOnCreate, MediaRulesOnUpdate
from services.kit import BadInput
from services.reminders import ReminderOffset
from services.tasks import (
    DEFAULT_REVIEW_WINDOW_SECONDS,
    BreakRequest,
    GpsRuleDraft,
    PartnerRuleDraft,
    SchedulePatch,
    TaskDraft,
    TaskPatch,
    activity_rule,
    check_schedule_text,
)


def aware(value: datetime, field: str) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise BadInput(field, "must carry a UTC offset, e.g. 2026-03-01T07:30:00+01:00")
    return value


@strawberry.input
class GeoPointInput:
    latitude: float = strawberry.field(description="-90..90")
    longitude: float = strawberry.field(description="-180..180")


@strawberry.input
class ScheduleInput:
    starts_at: datetime
    rrule: str | None = None
    timezone: str | None = strawberry.field(
        default=None, description="IANA zone of the schedule; left out or null: the owner's timezone"
    )
    window_seconds: int = 3600
    grace_seconds: int = 0

    def to_schedule(self, field: str, owner_zone: str) -> Schedule:
        timezone = self.timezone if self.timezone is not None else owner_zone
        check_schedule_text(self.rrule, timezone, field)
        return Schedule(
            starts_at=aware(self.starts_at, f"{field}.startsAt"),
            rrule=self.rrule,
            timezone=timezone,
            window_seconds=self.window_seconds,
            grace_seconds=self.grace_seconds,
        )


@strawberry.input
class GpsRuleInput:
    center: GeoPointInput
    radius_meters: float
    max_accuracy_meters: float = 100
    avoid: bool = strawberry.field(
        default=False,
        description="stay OUT of the geofence for the whole window, proved by reportLocations samples "
        "(set when the task is created)",
    )
    max_sample_gap_seconds: int | None = strawberry.field(
        default=None,
        description="avoid: the longest stretch of the window without a sample that still proves staying "
        "out (60..3600, default 600; set when the task is created)",
    )

    def to_draft(self) -> GpsRuleDraft:
        return GpsRuleDraft(
            latitude=self.center.latitude,
            longitude=self.center.longitude,
            radius_meters=self.radius_meters,
            max_accuracy_meters=self.max_accuracy_meters,
            avoid=self.avoid,
            max_sample_gap_seconds=self.max_sample_gap_seconds,
        )


@strawberry.input(
    description="an INTEGRATION task's rule: which reported activities prove an instance (all must hold)"
)
class IntegrationRuleInput:
    activity_types: list[str] = strawberry.field(
        default_factory=list,
        description="at most 20, compared case-insensitively (e.g. run, ride, build); empty: any type",
    )
    min_duration_seconds: float = strawberry.field(default=0.0, description="0: no minimum")
    min_distance_meters: float = strawberry.field(default=0.0, description="0: no minimum")

    def to_rule(self) -> ActivityRule:
        return activity_rule(self.activity_types, self.min_duration_seconds, self.min_distance_meters)


@strawberry.input
class PartnerRuleInput:
    review_window_seconds: int = DEFAULT_REVIEW_WINDOW_SECONDS
    on_timeout: ReviewTimeoutPolicy = ReviewTimeoutPolicyRow.REJECT

    def to_draft(self) -> PartnerRuleDraft:
        return PartnerRuleDraft(
            review_window_seconds=self.review_window_seconds,
            on_timeout=ReviewTimeoutPolicyRow(self.on_timeout),
        )


@strawberry.input(description="a DUE_SOON event offsetSeconds before the window opens or the instance is due")
class ReminderInput:
    before: ReminderAnchor
    offset_seconds: int = 0


def reminder_offsets(reminders: list[ReminderInput]) -> tuple[ReminderOffset, ...]:
    return tuple(ReminderOffset(ReminderAnchorRow(r.before), r.offset_seconds) for r in reminders)


@strawberry.input(
    description="a goal of `count` proofs per period (day, week, month; bounded at local midnight in the "
    "schedule's zone): each period is one instance, VERIFIED as soon as `count` proofs are counted, MISSED "
    "at its end otherwise"
)
class QuotaInput:
    count: int = strawberry.field(description=f"proofs per period, 1..{MAX_QUOTA_COUNT}")
    period: QuotaPeriod
    week_starts_on: Weekday = strawberry.field(default=Weekday.MONDAY, description="WEEK: the first day")
    min_gap_seconds: int | None = strawberry.field(
        default=None,
        description=(
            "a proof sooner than this after the last counted one does not count (0..604800); left out: 600, "
            "or less where `count` proofs that far apart would not fit in the period (100 a day: 414)"
        ),
    )

    def to_quota(self) -> Quota:
        period = Period(self.period.value)
        gap = self.min_gap_seconds
        if gap is None:
            gap = default_min_gap_seconds(self.count, period)
        return Quota(self.count, period, self.week_starts_on.value, gap)


@strawberry.input
class CreateTaskInput(MediaRulesOnCreate):
    title: str
    description: str | None = None
    method: VerificationMethod
    schedule: ScheduleInput
    gps: GpsRuleInput | None = strawberry.field(default=None, description="required when method = GPS")
    partner_review: PartnerRuleInput | None = strawberry.field(
        default=None, description="used when method = PARTNER"
    )
    integration: IntegrationRuleInput | None = strawberry.field(
        default=None, description="used when method = INTEGRATION; left out: any activity in the window"
    )
    reminders: list[ReminderInput] | None = strawberry.field(
        default=None, description="at most 5; each fires after the previous occurrence has closed"
    )
    quota: QuotaInput | None = strawberry.field(
        default=None,
        description="a quota goal: schedule.startsAt picks the first period, rrule stays null, graceSeconds "
        "0; windowSeconds is not used (each period is its instance's window)",
    )

    def to_draft(self, owner_zone: str) -> TaskDraft:
        """`owner_zone`: the zone of a schedule that names none (so 07:00 stays 07:00 in summer)."""
        return TaskDraft(
            title=self.title,
            description=self.description,
            method=self.method,
            schedule=self.schedule.to_schedule("input.schedule", owner_zone),
            gps=self.gps.to_draft() if self.gps else None,
            column_rules=self.media_column_rules(),
            partner=self.partner_review.to_draft() if self.partner_review else None,
            activity=self.integration.to_rule() if self.integration else None,
            require_capture_time=self.media_capture_required(),
            reminders=reminder_offsets(self.reminders or []),
            quota=self.quota.to_quota() if self.quota else None,
        )


@strawberry.input(description="fields left out keep their value")
class SchedulePatchInput:
    starts_at: datetime | None = strawberry.UNSET
    rrule: str | None = strawberry.UNSET
    timezone: str | None = strawberry.UNSET
    window_seconds: int | None = strawberry.UNSET
    grace_seconds: int | None = strawberry.UNSET

    def to_patch(self) -> SchedulePatch:
        starts_at = self.starts_at if isinstance(self.starts_at, datetime) else None
        rrule = self.rrule if isinstance(self.rrule, str) else None
        timezone = self.timezone if isinstance(self.timezone, str) else None
        check_schedule_text(rrule, timezone, "input.schedule")
        return SchedulePatch(
            starts_at=aware(starts_at, "input.schedule.startsAt") if starts_at else None,
            rrule=rrule,
            rrule_set=self.rrule is not strawberry.UNSET,
            timezone=timezone,
            window_seconds=self.window_seconds if isinstance(self.window_seconds, int) else None,
            grace_seconds=self.grace_seconds if isinstance(self.grace_seconds, int) else None,
        )


@strawberry.input(
    description="a quota goal's count or gap (its period is fixed); fields left out keep their value"
)
class QuotaPatchInput:
    count: int | None = None
    min_gap_seconds: int | None = None


@strawberry.input(description="every field optional; a schedule change re-plans this task's chain")
class UpdateTaskInput(MediaRulesOnUpdate):
    title: str | None = strawberry.UNSET
    description: str | None = strawberry.UNSET
    schedule: SchedulePatchInput | None = strawberry.UNSET
    gps: GpsRuleInput | None = strawberry.UNSET
    partner_review: PartnerRuleInput | None = strawberry.UNSET
    integration: IntegrationRuleInput | None = strawberry.UNSET
    reminders: list[ReminderInput] | None = strawberry.field(
        default=strawberry.UNSET, description="replaces the task's reminders; [] removes them"
    )
    quota: QuotaPatchInput | None = strawberry.field(
        default=strawberry.UNSET, description="a quota goal: a lower count or gap is easier (it waits)"
    )

    def to_patch(self) -> TaskPatch:
        quota = self.quota if isinstance(self.quota, QuotaPatchInput) else None
        return TaskPatch(
            title=self.title if isinstance(self.title, str) else None,
            description=self.description if isinstance(self.description, str) else None,
            description_set=self.description is not strawberry.UNSET,
            schedule=self.schedule.to_patch() if self.schedule else None,
            gps=self.gps.to_draft() if self.gps else None,
            column_rules=self.media_column_rules(),
            partner=self.partner_review.to_draft() if self.partner_review else None,
            activity=self.integration.to_rule() if self.integration else None,
            require_capture_time=self.media_capture_required(),
            reminders=reminder_offsets(self.reminders) if isinstance(self.reminders, list) else None,
            quota_count=quota.count if quota else None,
            quota_min_gap_seconds=quota.min_gap_seconds if quota else None,
        )


@strawberry.input(
    description="days off: the occurrences due from startsOn to endsOn (in the task's zone) are not due"
)
class ScheduleBreakInput:
    task_id: strawberry.ID | None = strawberry.field(
        default=None, description="the task; left out or null: every task of yours not deleted or ended"
    )
    starts_on: date = strawberry.field(description="the first day off")
    ends_on: date = strawberry.field(description="the last day off (at most 366 days after startsOn)")

    def to_request(self) -> BreakRequest:
        task_id = str(self.task_id) if self.task_id is not None else None
        return BreakRequest(task_id=task_id, starts_on=self.starts_on, ends_on=self.ends_on)

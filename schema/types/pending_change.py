"""An easier edit waiting out its owner's commitment horizon, as the owner and active partners see it."""

from __future__ import annotations

from datetime import datetime

import strawberry

from models import Task as TaskRow
from schema.enums import ReviewTimeoutPolicy
from schema.media_rules import MediaRulesWaiting
from schema.types.integration import PendingIntegrationRule
from services.tasks import GPS_PARTS
from services.tasks import PendingChange as WaitingChange


@strawberry.type(description="the schedule fields that will change; null: unchanged")
class PendingSchedule:
    starts_at: datetime | None
    rrule_changed: bool = strawberry.field(description="rrule below is the new rule (null: a one-off)")
    rrule: str | None
    timezone: str | None
    window_seconds: int | None
    grace_seconds: int | None


@strawberry.type(description="the geofence fields that will change; null: unchanged")
class PendingGpsRule:
    center_changed: bool
    latitude: float | None = strawberry.field(description="the owner's alone: null for partners")
    longitude: float | None = strawberry.field(description="the owner's alone: null for partners")
    radius_meters: float | None
    max_accuracy_meters: float | None


@strawberry.type(description="the partner-review rule it will have")
class PendingPartnerRule:
    review_window_seconds: int
    on_timeout: ReviewTimeoutPolicy


@strawberry.type(
    description="easier edits wait out the owner's commitment horizon; at effectiveAt they apply"
)
class PendingChange(MediaRulesWaiting):
    effective_at: datetime
    pause: bool = strawberry.field(description="the task will be paused")
    delete: bool = strawberry.field(description="the task will be deleted")
    schedule: PendingSchedule | None
    gps: PendingGpsRule | None
    partner_review: PendingPartnerRule | None
    integration: PendingIntegrationRule | None = strawberry.field(
        description="the activity rule it will have"
    )
    require_capture_time: bool | None = strawberry.field(
        description="false: photos or videos will no longer need a capture time; null: unchanged"
    )
    quota_count: int | None = strawberry.field(description="a quota goal's lower count; null: unchanged")
    quota_min_gap_seconds: int | None = strawberry.field(
        description="a quota goal's shorter minimum gap; null: unchanged"
    )


def pending_change_of(row: TaskRow, *, owner: bool) -> PendingChange | None:
    """The task's pending change, with the geofence centre shown to its owner only."""
    pending = WaitingChange.read(row.pending_change)
    if pending.is_empty or row.pending_effective_at is None:
        return None
    partner = pending.partner_review
    return PendingChange(
        waiting=pending,
        effective_at=row.pending_effective_at,
        pause=pending.pause,
        delete=pending.delete,
        schedule=_schedule(pending),
        gps=_gps(pending, owner=owner),
        partner_review=PendingPartnerRule(
            review_window_seconds=partner.review_window_seconds,
            on_timeout=ReviewTimeoutPolicy(partner.on_timeout.value),
        )
        if partner is not None
        else None,
        integration=PendingIntegrationRule.of(pending.activity_rule)
        if pending.activity_rule is not None
        else None,
        require_capture_time=False if pending.capture_time_optional else None,
        quota_count=pending.quota_count,
        quota_min_gap_seconds=pending.quota_min_gap_seconds,
    )


def _schedule(pending: WaitingChange) -> PendingSchedule | None:
    if not pending.touches_schedule:
        return None
    shape = pending.shape
    return PendingSchedule(
        starts_at=shape.starts_at if shape else None,
        rrule_changed=shape is not None,
        rrule=shape.rrule if shape else None,
        timezone=shape.timezone if shape else None,
        window_seconds=pending.window_seconds,
        grace_seconds=pending.grace_seconds,
    )


def _gps(pending: WaitingChange, *, owner: bool) -> PendingGpsRule | None:
    if not pending.parts() & GPS_PARTS:
        return None
    center = pending.gps_center
    return PendingGpsRule(
        center_changed=center is not None,
        latitude=center[0] if center and owner else None,
        longitude=center[1] if center and owner else None,
        radius_meters=pending.gps_radius_meters,
        max_accuracy_meters=pending.gps_max_accuracy_meters,
    )

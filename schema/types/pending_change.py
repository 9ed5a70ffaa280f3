"""An easier edit waiting out its owner's commitment horizon, as the owner and active partners see it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry

from models import Task as TaskRow
from schema.enums import ReviewTimeoutPolicy


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
class PendingChange:
    effective_at: datetime
    pause: bool = strawberry.field(description="the task will be paused")
    delete: bool = strawberry.field(description="the task will be deleted")
    schedule: PendingSchedule | None
    gps: PendingGpsRule | None
    video_min_duration_seconds: float | None
    partner_review: PendingPartnerRule | None


def pending_change_of(row: TaskRow, *, owner: bool) -> PendingChange | None:
    """The task's pending change, with the geofence centre shown to its owner only."""
    pending: dict[str, Any] | None = row.pending_change
    if not pending or row.pending_effective_at is None:
        return None
    return PendingChange(
        effective_at=row.pending_effective_at,
        pause=bool(pending.get("pause")),
        delete=bool(pending.get("delete")),
        schedule=_schedule(pending),
        gps=_gps(pending, owner=owner),
        video_min_duration_seconds=pending.get("video_min_duration_seconds"),
        partner_review=PendingPartnerRule(
            review_window_seconds=pending["review_window_seconds"],
            on_timeout=ReviewTimeoutPolicy(pending["review_on_timeout"]),
        )
        if "review_window_seconds" in pending
        else None,
    )


def _schedule(pending: dict[str, Any]) -> PendingSchedule | None:
    keys = ("starts_at", "window_seconds", "grace_seconds")
    if not any(key in pending for key in keys):
        return None
    return PendingSchedule(
        starts_at=datetime.fromisoformat(pending["starts_at"]) if "starts_at" in pending else None,
        rrule_changed="rrule" in pending,
        rrule=pending.get("rrule"),
        timezone=pending.get("timezone"),
        window_seconds=pending.get("window_seconds"),
        grace_seconds=pending.get("grace_seconds"),
    )


def _gps(pending: dict[str, Any], *, owner: bool) -> PendingGpsRule | None:
    if not any(key.startswith("gps_") for key in pending):
        return None
    return PendingGpsRule(
        center_changed="gps_latitude" in pending,
        latitude=pending.get("gps_latitude") if owner else None,
        longitude=pending.get("gps_longitude") if owner else None,
        radius_meters=pending.get("gps_radius_meters"),
        max_accuracy_meters=pending.get("gps_max_accuracy_meters"),
    )

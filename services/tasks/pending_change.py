"""A task's pending change as one typed value: what waits out the owner's commitment horizon.

Stored in tasks.pending_change as JSON, one key per column it will set plus `pause` and `delete`.
`PendingChange.read` is the one parser and `columns` the one writer, so the keys are spelled here alone.
An edit supersedes a waiting value part by part (`Part`): a new geofence drops the whole waiting geofence,
a new schedule shape the whole waiting shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from models import ReviewTimeoutPolicy
from rules.activity import ActivityRule
from services.tasks.activity_rules import read_activity_rule, stored_activity_rule
from services.tasks.drafts import COLUMN_RULES, PartnerRuleDraft


class Part(StrEnum):
    """What waits as a whole. Each value is the name of its field on PendingChange."""

    SHAPE = "shape"  # starts_at, rrule and timezone together (with the COUNT end found when it was held)
    WINDOW = "window_seconds"
    GRACE = "grace_seconds"
    GPS_CENTER = "gps_center"
    GPS_RADIUS = "gps_radius_meters"
    GPS_ACCURACY = "gps_max_accuracy_meters"
    VIDEO_MIN_DURATION = "video_min_duration_seconds"
    PARTNER_REVIEW = "partner_review"
    ACTIVITY = "activity_rule"
    CAPTURE_OPTIONAL = "capture_time_optional"  # a photo or video will no longer need a capture time
    QUOTA_COUNT = "quota_count"
    QUOTA_MIN_GAP = "quota_min_gap_seconds"
    PAUSE = "pause"
    DELETE = "delete"


SCHEDULE_PARTS = frozenset({Part.SHAPE, Part.WINDOW, Part.GRACE})
GPS_PARTS = frozenset({Part.GPS_CENTER, Part.GPS_RADIUS, Part.GPS_ACCURACY})
# set in place on the task row; a method's one-column rule (drafts.COLUMN_RULES) waits as the Part and
# the PendingChange field of its own name, stored under that name too
RULE_PARTS = (
    GPS_PARTS
    | {Part(rule.field) for rule in COLUMN_RULES}
    | {
        Part.PARTNER_REVIEW,
        Part.ACTIVITY,
        Part.CAPTURE_OPTIONAL,
        Part.QUOTA_COUNT,
        Part.QUOTA_MIN_GAP,
    }
)
_FLAGS = frozenset({Part.PAUSE, Part.DELETE, Part.CAPTURE_OPTIONAL})


@dataclass(frozen=True)
class WaitingShape:
    starts_at: datetime
    rrule: str | None  # None: a one-off
    timezone: str
    count_ends_at: datetime | None  # a COUNT rule's last due time, found when the change was held


@dataclass(frozen=True)
class PendingChange:
    shape: WaitingShape | None = None
    window_seconds: int | None = None
    grace_seconds: int | None = None
    gps_center: tuple[float, float] | None = None  # (latitude, longitude): the centre moves as one
    gps_radius_meters: float | None = None
    gps_max_accuracy_meters: float | None = None
    video_min_duration_seconds: float | None = None
    partner_review: PartnerRuleDraft | None = None
    activity_rule: ActivityRule | None = None
    capture_time_optional: bool = False  # only dropping the requirement waits: it is the one easier value
    quota_count: int | None = None
    quota_min_gap_seconds: int | None = None
    pause: bool = False
    delete: bool = False

    @classmethod
    def read(cls, columns: Mapping[str, Any] | None) -> PendingChange:
        """The change stored in tasks.pending_change (None or {}: nothing waits)."""
        c = columns or {}
        shape = None
        if "starts_at" in c:
            shape = WaitingShape(
                starts_at=datetime.fromisoformat(c["starts_at"]),
                rrule=c.get("rrule"),
                timezone=c["timezone"],
                count_ends_at=_instant(c.get("count_ends_at")),
            )
        center = None
        if "gps_latitude" in c:
            center = (float(c["gps_latitude"]), float(c["gps_longitude"]))
        partner = None
        if "review_window_seconds" in c:
            partner = PartnerRuleDraft(
                int(c["review_window_seconds"]), ReviewTimeoutPolicy(c["review_on_timeout"])
            )
        return cls(
            shape=shape,
            window_seconds=c.get("window_seconds"),
            grace_seconds=c.get("grace_seconds"),
            gps_center=center,
            gps_radius_meters=c.get("gps_radius_meters"),
            gps_max_accuracy_meters=c.get("gps_max_accuracy_meters"),
            partner_review=partner,
            activity_rule=read_activity_rule(c["activity_rule"]) if "activity_rule" in c else None,
            capture_time_optional=bool(c.get("capture_time_optional")),
            quota_count=c.get("quota_count"),
            quota_min_gap_seconds=c.get("quota_min_gap_seconds"),
            pause=bool(c.get("pause")),
            delete=bool(c.get("delete")),
            **{rule.field: c.get(rule.field) for rule in COLUMN_RULES},
        )

    def columns(self) -> dict[str, Any] | None:
        """What tasks.pending_change stores (None when nothing waits)."""
        c: dict[str, Any] = {}
        if self.shape is not None:
            ends = self.shape.count_ends_at
            c.update(
                starts_at=self.shape.starts_at.isoformat(),
                rrule=self.shape.rrule,
                timezone=self.shape.timezone,
                count_ends_at=ends.isoformat() if ends is not None else None,
            )
        for key in (
            "window_seconds",
            "grace_seconds",
            "gps_radius_meters",
            "gps_max_accuracy_meters",
            "quota_count",
            "quota_min_gap_seconds",
            *(rule.field for rule in COLUMN_RULES),
        ):
            if getattr(self, key) is not None:
                c[key] = getattr(self, key)
        if self.gps_center is not None:
            c["gps_latitude"], c["gps_longitude"] = self.gps_center
        if self.partner_review is not None:
            c["review_window_seconds"] = self.partner_review.review_window_seconds
            c["review_on_timeout"] = self.partner_review.on_timeout.value
        if self.activity_rule is not None:
            c["activity_rule"] = stored_activity_rule(self.activity_rule)
        if self.capture_time_optional:
            c["capture_time_optional"] = True
        if self.pause:
            c["pause"] = True
        if self.delete:
            c["delete"] = True
        return c or None

    def parts(self) -> frozenset[Part]:
        """The parts that wait."""
        # by identity: a waiting 0 (a quota goal's gap) is a value, not "nothing waits"
        return frozenset(
            p for p in Part if getattr(self, p.value) is not None and getattr(self, p.value) is not False
        )

    @property
    def is_empty(self) -> bool:
        return not self.parts()

    @property
    def touches_schedule(self) -> bool:
        return bool(self.parts() & SCHEDULE_PARTS)

    def without(self, parts: Iterable[Part]) -> PendingChange:
        """This change with the given parts no longer waiting (an edit superseded them)."""
        cleared: dict[str, Any] = {p.value: (False if p in _FLAGS else None) for p in parts}
        return replace(self, **cleared)

    def joined(self, later: PendingChange) -> PendingChange:
        """This change with every part `later` has taken from `later`."""
        taken: dict[str, Any] = {p.value: getattr(later, p.value) for p in later.parts()}
        return replace(self, **taken)

    def gains(self, later: PendingChange) -> bool:
        """Whether joining `later` adds a part or changes a waiting value."""
        return any(getattr(self, p.value) != getattr(later, p.value) for p in later.parts())


def _instant(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None

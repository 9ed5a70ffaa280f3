"""A task's pending change as one typed value: what waits out the owner's commitment horizon.

Stored in tasks.pending_change as JSON, one key per column it will set plus `pause` and `delete`.
`PendingChange.read` is the one parser and `columns` the one writer, so the keys are spelled here alone.
An edit supersedes a waiting value part by part (`Part`): a new geofence drops the whole waiting geofence,
a new schedule shape the whole waiting shape. A proof kind's one-number rule (drafts.COLUMN_RULES) is a
part of its own, the `ColumnRule` itself, its value kept in `column_rules` and stored under its column's
name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from models import ReviewTimeoutPolicy
from rules.activity import ActivityRule
from services.tasks.activity_rules import read_activity_rule, stored_activity_rule
from services.tasks.drafts import COLUMN_RULES, ColumnRule, ColumnValues, PartnerRuleDraft


class Part(StrEnum):
    """What waits as a whole. Each value is the name of its field on PendingChange."""

    SHAPE = "shape"  # starts_at, rrule and timezone together (with the COUNT end found when it was held)
    WINDOW = "window_seconds"
    GRACE = "grace_seconds"
    GPS_CENTER = "gps_center"
    GPS_RADIUS = "gps_radius_meters"
    GPS_ACCURACY = "gps_max_accuracy_meters"
    PARTNER_REVIEW = "partner_review"
    ACTIVITY = "activity_rule"
    CAPTURE_OPTIONAL = "capture_time_optional"  # a photo or video will no longer need a capture time
    QUOTA_COUNT = "quota_count"
    QUOTA_MIN_GAP = "quota_min_gap_seconds"
    PAUSE = "pause"
    DELETE = "delete"


# what waits as a whole: a fixed part, or a proof kind's one-number rule
WaitingPart = Part | ColumnRule

SCHEDULE_PARTS = frozenset({Part.SHAPE, Part.WINDOW, Part.GRACE})
GPS_PARTS = frozenset({Part.GPS_CENTER, Part.GPS_RADIUS, Part.GPS_ACCURACY})
# set in place on the task row
RULE_PARTS: frozenset[WaitingPart] = (
    GPS_PARTS
    | set(COLUMN_RULES)
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
    column_rules: ColumnValues = field(default_factory=dict)
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
            column_rules={rule: c[rule.column] for rule in COLUMN_RULES if c.get(rule.column) is not None},
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
        ):
            if getattr(self, key) is not None:
                c[key] = getattr(self, key)
        for rule, value in self.column_rules.items():
            c[rule.column] = value
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

    def parts(self) -> frozenset[WaitingPart]:
        """The parts that wait."""
        # by identity: a waiting 0 (a quota goal's gap) is a value, not "nothing waits"
        fixed = (
            p for p in Part if getattr(self, p.value) is not None and getattr(self, p.value) is not False
        )
        return frozenset((*fixed, *self.column_rules))

    def part_names(self) -> list[str]:
        """The waiting parts by name (a one-number rule by its column), sorted: for logs."""
        return sorted(p.column if isinstance(p, ColumnRule) else p.value for p in self.parts())

    @property
    def is_empty(self) -> bool:
        return not self.parts()

    @property
    def touches_schedule(self) -> bool:
        return bool(self.parts() & SCHEDULE_PARTS)

    def without(self, parts: Iterable[WaitingPart]) -> PendingChange:
        """This change with the given parts no longer waiting (an edit superseded them)."""
        gone = frozenset(parts)
        cleared: dict[str, Any] = {
            p.value: (False if p in _FLAGS else None) for p in gone if isinstance(p, Part)
        }
        kept = {rule: value for rule, value in self.column_rules.items() if rule not in gone}
        return replace(self, column_rules=kept, **cleared)

    def joined(self, later: PendingChange) -> PendingChange:
        """This change with every part `later` has taken from `later`."""
        taken: dict[str, Any] = {
            p.value: getattr(later, p.value) for p in later.parts() if isinstance(p, Part)
        }
        return replace(self, column_rules={**self.column_rules, **later.column_rules}, **taken)

    def gains(self, later: PendingChange) -> bool:
        """Whether joining `later` adds a part or changes a waiting value."""
        return any(
            getattr(self, p.value) != getattr(later, p.value) for p in later.parts() if isinstance(p, Part)
        ) or any(self.column_rules.get(rule) != value for rule, value in later.column_rules.items())


def _instant(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None

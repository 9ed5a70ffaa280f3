"""The pending change's one parser and one writer: what is stored reads back as it was written, for every
part, in the JSON shape rows already hold; and merging drops what an edit supersedes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from models import ReviewTimeoutPolicy, Task
from rules.horizon import ScalarField
from services.tasks import (
    COLUMN_RULES,
    GPS_PARTS,
    ColumnRule,
    Part,
    PartnerRuleDraft,
    PendingChange,
    WaitingShape,
)
from services.tasks.pending_change import RULE_PARTS

pytestmark = pytest.mark.unit

STORED = {
    "starts_at": "2027-03-22T06:00:00+00:00",
    "rrule": "FREQ=DAILY;COUNT=3",
    "timezone": "Europe/Berlin",
    "count_ends_at": "2027-03-24T06:00:00+00:00",
    "window_seconds": 600,
    "grace_seconds": 60,
    "gps_latitude": 52.52,
    "gps_longitude": 13.405,
    "gps_radius_meters": 2000.0,
    "gps_max_accuracy_meters": 80.0,
    "video_min_duration_seconds": 12.5,
    "review_window_seconds": 3600,
    "review_on_timeout": "APPROVE",
    "activity_rule": {"activity_types": ["run"], "min_duration_seconds": 600.0, "min_distance_meters": 0.0},
    "capture_time_optional": True,
    "quota_count": 2,
    "quota_min_gap_seconds": 3600,
    "pause": True,
    "delete": True,
}


def test_every_part_reads_back_as_it_was_stored() -> None:
    change = PendingChange.read(STORED)
    assert change.shape == WaitingShape(
        datetime(2027, 3, 22, 6, tzinfo=UTC),
        "FREQ=DAILY;COUNT=3",
        "Europe/Berlin",
        datetime(2027, 3, 24, 6, tzinfo=UTC),
    )
    assert change.gps_center == (52.52, 13.405)
    assert change.partner_review == PartnerRuleDraft(3600, ReviewTimeoutPolicy.APPROVE)
    assert change.parts() == frozenset(Part) | set(COLUMN_RULES)
    assert change.column_rules == {ColumnRule.VIDEO_MIN_DURATION: 12.5}
    assert change.columns() == STORED


@pytest.mark.parametrize(
    "stored",
    [
        {"pause": True},
        {"delete": True},
        {"gps_radius_meters": 2000.0},
        {"starts_at": "2027-03-22T06:00:00+00:00", "rrule": None, "timezone": "UTC", "count_ends_at": None},
        {"review_window_seconds": 60, "review_on_timeout": "REJECT"},
        {"video_min_duration_seconds": 3.0},
    ],
)
def test_a_single_part_round_trips_alone(stored: dict[str, object]) -> None:
    change = PendingChange.read(stored)
    assert len(change.parts()) == 1
    assert change.columns() == stored


def test_nothing_waiting_is_stored_as_null() -> None:
    nothing: tuple[dict[str, object] | None, ...] = (None, {})
    for stored in nothing:
        change = PendingChange.read(stored)
        assert change.is_empty and change.columns() is None and not change.touches_schedule


def test_an_edit_supersedes_whole_parts_and_waits_again_only_when_it_gains() -> None:
    waiting = PendingChange.read(STORED)
    assert waiting.touches_schedule
    kept = waiting.without(GPS_PARTS | {Part.PAUSE})
    assert kept.gps_center is None and kept.gps_radius_meters is None and not kept.pause
    assert kept.column_rules == {ColumnRule.VIDEO_MIN_DURATION: 12.5}  # untouched parts stay
    assert not kept.gains(
        PendingChange(column_rules={ColumnRule.VIDEO_MIN_DURATION: 12.5})
    )  # the same value again
    assert kept.gains(PendingChange(column_rules={ColumnRule.VIDEO_MIN_DURATION: 20.0}))
    assert kept.gains(PendingChange(pause=True))  # a part it did not have
    joined = kept.joined(PendingChange(gps_radius_meters=500.0))
    assert (joined.gps_radius_meters, joined.column_rules) == (500.0, {ColumnRule.VIDEO_MIN_DURATION: 12.5})
    assert kept.without({ColumnRule.VIDEO_MIN_DURATION}).column_rules == {}
    assert "video_min_duration_seconds" in kept.part_names()


def test_each_one_column_rule_is_named_by_its_column_alone() -> None:
    """A `ColumnRule` is its own key from the input to the pending change; its column's name is what the
    task row holds, what the horizon compares and what the pending change stores."""
    assert COLUMN_RULES
    for rule in COLUMN_RULES:
        assert rule.column in Task._meta.fields_map
        assert rule.horizon_field == ScalarField(rule.column, rule.larger_is_easier)
        assert rule in RULE_PARTS
        waiting = PendingChange.read({rule.column: 7.0})
        assert waiting.column_rules == {rule: 7.0}
        assert waiting.parts() == {rule}
        assert waiting.columns() == {rule.column: 7.0}

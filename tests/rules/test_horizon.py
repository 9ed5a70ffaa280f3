"""The commitment horizon's rule (rules/horizon.py): every field, both directions, and no change."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rules.activity import ActivityRule
from rules.horizon import (
    DueSpan,
    Field,
    Lifecycle,
    PartnerReview,
    RuleField,
    ScalarField,
    Value,
    lifecycle_waits,
    makes_easier,
    waiting_fields,
)

pytestmark = pytest.mark.unit

T0 = datetime(2027, 1, 4, 7, 0, tzinfo=UTC)
# a proof kind's one-number rules, as services/tasks/drafts.py declares them
SHORTER_IS_EASIER = ScalarField("video_min_duration_seconds", larger_is_easier=False)
LONGER_IS_EASIER = ScalarField("max_seconds", larger_is_easier=True)


def days(*offsets: int) -> list[datetime]:
    return [T0 + timedelta(days=n) for n in offsets]


@pytest.mark.parametrize(
    ("field", "old", "new", "easier"),
    [
        (RuleField.WINDOW, 3600, 7200, True),
        (RuleField.WINDOW, 3600, 1800, False),
        (RuleField.WINDOW, 3600, 3600, False),
        (RuleField.GRACE, 0, 600, True),
        (RuleField.GRACE, 600, 0, False),
        (RuleField.GRACE, 600, 600, False),
        (RuleField.GPS_RADIUS, 150.0, 500.0, True),
        (RuleField.GPS_RADIUS, 150.0, 50.0, False),
        (RuleField.GPS_RADIUS, 150.0, 150.0, False),
        (RuleField.GPS_ACCURACY, 100.0, 1000.0, True),  # a vaguer fix is accepted
        (RuleField.GPS_ACCURACY, 100.0, 20.0, False),
        (RuleField.GPS_ACCURACY, 100.0, 100.0, False),
        (SHORTER_IS_EASIER, 30.0, 5.0, True),
        (SHORTER_IS_EASIER, 5.0, 30.0, False),
        (SHORTER_IS_EASIER, 5.0, 5.0, False),
        (LONGER_IS_EASIER, 5.0, 30.0, True),
        (LONGER_IS_EASIER, 30.0, 5.0, False),
        (LONGER_IS_EASIER, 5.0, 5.0, False),
        (RuleField.GPS_CENTER, (52.52, 13.405), (48.137, 11.575), True),  # moved: maybe to where one is
        (RuleField.GPS_CENTER, (52.52, 13.405), (52.52, 13.405), False),
        (RuleField.QUOTA_COUNT, 3, 2, True),  # fewer proofs a period
        (RuleField.QUOTA_COUNT, 3, 4, False),
        (RuleField.QUOTA_COUNT, 3, 3, False),
        (RuleField.QUOTA_MIN_GAP, 3600, 0, True),  # proofs closer together count
        (RuleField.QUOTA_MIN_GAP, 0, 3600, False),
    ],
)
def test_numbers_and_places(field: Field, old: Value, new: Value, easier: bool) -> None:
    assert makes_easier(field, old, new) is easier


@pytest.mark.parametrize(
    ("old", "new", "easier"),
    [
        (PartnerReview(3600, False), PartnerReview(3600, True), True),  # timeout now approves
        (PartnerReview(3600, True), PartnerReview(3600, False), False),
        (PartnerReview(3600, True), PartnerReview(60, True), True),  # approves sooner
        (PartnerReview(60, True), PartnerReview(3600, True), False),
        (PartnerReview(60, False), PartnerReview(3600, False), True),  # longer to approve before it rejects
        (PartnerReview(3600, False), PartnerReview(60, False), False),
        (PartnerReview(3600, False), PartnerReview(3600, False), False),
        (PartnerReview(60, True), PartnerReview(86400, False), False),
        (PartnerReview(86400, False), PartnerReview(60, True), True),
    ],
)
def test_partner_review(old: PartnerReview, new: PartnerReview, easier: bool) -> None:
    assert makes_easier(RuleField.PARTNER_REVIEW, old, new) is easier


def span(times: list[datetime], continues: bool = True, last: datetime | None = None) -> DueSpan:
    return DueSpan(frozenset(times), continues, last)


@pytest.mark.parametrize(
    ("old", "new", "easier"),
    [
        # every other day instead of daily: fewer occurrences
        (span(days(0, 1, 2, 3)), span(days(0, 2)), True),
        # COUNT lowered or UNTIL moved into the horizon: the new rule ends inside it
        (span(days(0, 1, 2, 3)), span(days(0, 1), continues=False), True),
        # the same due times within the horizon, but an end earlier than the one the old rule owes
        (
            span(days(0, 1), last=T0 + timedelta(days=90)),
            span(days(0, 1), last=T0 + timedelta(days=60)),
            True,
        ),
        (span(days(0, 1)), span(days(0, 1), last=T0 + timedelta(days=3000)), True),  # endless -> ending
        # UNTIL extended or COUNT raised: every old due time stays, and it ends later
        (
            span(days(0, 1), last=T0 + timedelta(days=60)),
            span(days(0, 1), last=T0 + timedelta(days=90)),
            False,
        ),
        (span(days(0, 1), continues=False), span(days(0, 1, 2, 3)), False),
        (span(days(0, 1), last=T0 + timedelta(days=60)), span(days(0, 1)), False),  # ending -> endless
        # denser: daily -> twice a day keeps every old time
        (
            span(days(0, 1)),
            span([T0, T0 + timedelta(hours=12), *days(1), T0 + timedelta(days=1, hours=12)]),
            False,
        ),
        # moved an hour: the old times are no longer due
        (span(days(0, 1)), span([t + timedelta(hours=1) for t in days(0, 1)]), True),
        # the same times (e.g. only the zone's name changed): not easier
        (span(days(0, 1, 2)), span(days(0, 1, 2)), False),
        # the old rule is exhausted: nothing is owed, so any new rule owes more
        (span([], continues=False), span([], continues=False), False),
        (span([], continues=False), span(days(0)), False),
        # a one-off in the past replacing a daily rule: nothing is due any more
        (span(days(0, 1)), span([], continues=False), True),
    ],
)
def test_occurrences(old: DueSpan, new: DueSpan, easier: bool) -> None:
    assert makes_easier(RuleField.OCCURRENCES, old, new) is easier


@pytest.mark.parametrize(
    ("action", "active", "waits"),
    [
        (Lifecycle.PAUSE, True, True),
        (Lifecycle.DELETE, True, True),
        (Lifecycle.RESUME, True, False),
        (Lifecycle.PAUSE, False, False),  # a paused or ended task owes nothing
        (Lifecycle.DELETE, False, False),
        (Lifecycle.RESUME, False, False),
    ],
)
def test_lifecycle(action: Lifecycle, active: bool, waits: bool) -> None:
    assert lifecycle_waits(action, active=active) is waits


def test_a_mixed_edit_splits_by_field() -> None:
    current: dict[Field, Value] = {
        RuleField.GPS_CENTER: (52.52, 13.405),
        RuleField.GPS_RADIUS: 150.0,
        RuleField.GPS_ACCURACY: 100.0,
    }
    proposed: dict[Field, Value] = {
        RuleField.GPS_CENTER: (52.52, 13.405),
        RuleField.GPS_RADIUS: 500.0,  # easier
        RuleField.GPS_ACCURACY: 20.0,  # harder
        SHORTER_IS_EASIER: 1.0,  # the task has no video rule: never waits (refused elsewhere)
    }
    assert waiting_fields(current, proposed) == {RuleField.GPS_RADIUS}


def test_every_field_has_a_direction() -> None:
    """No field falls through to the occurrence comparison by mistake."""
    samples: dict[RuleField, tuple[Value, Value]] = {
        RuleField.WINDOW: (1, 2),
        RuleField.GRACE: (1, 2),
        RuleField.GPS_RADIUS: (1.0, 2.0),
        RuleField.GPS_ACCURACY: (1.0, 2.0),
        RuleField.GPS_CENTER: ((0.0, 0.0), (1.0, 1.0)),
        RuleField.PARTNER_REVIEW: (PartnerReview(1, False), PartnerReview(1, True)),
        RuleField.OCCURRENCES: (span(days(0)), span(days(1))),
        RuleField.ACTIVITY: (ActivityRule(frozenset({"run"})), ActivityRule(frozenset())),
        RuleField.CAPTURE_TIME: (1.0, 0.0),
        RuleField.QUOTA_COUNT: (3, 2),
        RuleField.QUOTA_MIN_GAP: (60, 0),
    }
    assert set(samples) == set(RuleField)
    for field, (old, new) in samples.items():
        assert makes_easier(field, old, new), field
        assert not makes_easier(field, new, new), field

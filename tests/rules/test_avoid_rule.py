"""rules/avoid.py: inside only when the whole accuracy circle is; coverage counts the window's two ends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rules.avoid import Sample, certainly_inside, judge_avoidance

pytestmark = pytest.mark.unit

OPENS = datetime(2027, 3, 1, 18, tzinfo=UTC)
DUE = OPENS + timedelta(minutes=30)


def at(minutes: float, inside: bool = False) -> Sample:
    return Sample(OPENS + timedelta(minutes=minutes), inside)


@pytest.mark.parametrize(
    ("distance", "accuracy", "inside"),
    [(100, 50, True), (100, 51, False), (0, 150, True), (149, 10, False), (200, 0, False)],
)
def test_a_sample_convicts_only_when_its_whole_circle_is_inside(
    distance: float, accuracy: float, inside: bool
) -> None:
    assert certainly_inside(distance, accuracy, 150) is inside


def test_the_first_sample_inside_is_when_the_place_was_entered() -> None:
    verdict = judge_avoidance([at(20, inside=True), at(5), at(12, inside=True)], OPENS, DUE, 600)
    assert (verdict.reason, verdict.entered_at) == ("ENTERED_AVOIDED_PLACE", OPENS + timedelta(minutes=12))


@pytest.mark.parametrize(
    ("samples", "reason"),
    [
        ([at(5), at(15), at(25)], None),  # gaps of 5, 10, 10, 5 minutes
        ([at(11), at(20)], "NOT_ENOUGH_SAMPLES"),  # the opening to the first: 11 minutes
        ([at(5), at(19)], "NOT_ENOUGH_SAMPLES"),  # the last to the due time: 11 minutes
        ([at(10), at(20)], None),  # exactly the gap allowed, three times
        ([], "NOT_ENOUGH_SAMPLES"),
    ],
)
def test_coverage_counts_both_ends_of_the_window(samples: list[Sample], reason: str | None) -> None:
    assert judge_avoidance(samples, OPENS, DUE, 600).reason == reason


def test_no_sample_never_proves_a_short_window() -> None:
    assert judge_avoidance([], OPENS, OPENS + timedelta(seconds=30), 600).reason == "NOT_ENOUGH_SAMPLES"

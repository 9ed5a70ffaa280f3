"""rules/breaks.py: a break's days as instants in the task's zone, clipped by the horizon."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from rules.breaks import BreakSpan, break_span, covering, day_start

pytestmark = pytest.mark.unit


def test_a_break_covers_whole_days_in_its_zone_across_a_clock_change() -> None:
    span = break_span(date(2027, 3, 27), date(2027, 3, 28), "Europe/Berlin", datetime(2000, 1, 1, tzinfo=UTC))
    assert span.applies_from == datetime(2027, 3, 26, 23, tzinfo=UTC)  # midnight at +01:00
    assert span.ends_at == datetime(2027, 3, 28, 22, tzinfo=UTC)  # the next midnight at +02:00
    assert span.covers(datetime(2027, 3, 28, 21, 59, tzinfo=UTC))
    assert not span.covers(span.ends_at)


def test_the_horizon_clips_where_it_applies_from() -> None:
    later = datetime(2027, 3, 27, 9, tzinfo=UTC)
    span = break_span(date(2027, 3, 27), date(2027, 3, 27), "UTC", later)
    assert (span.applies_from, span.ends_at) == (later, datetime(2027, 3, 28, tzinfo=UTC))
    assert not span.covers(later - timedelta(seconds=1))


def test_overlapping_breaks_answer_with_the_one_ending_last() -> None:
    start = day_start(date(2027, 5, 1), "UTC")
    short, long = BreakSpan(start, start + timedelta(days=1)), BreakSpan(start, start + timedelta(days=3))
    assert covering([short, long], start + timedelta(hours=2)) == long
    assert covering([short, long], start + timedelta(days=4)) is None

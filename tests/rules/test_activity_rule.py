"""The activity rule (rules/activity.py): each reason an activity is refused, the window's ends, any type
when none is listed, the one spelling of a type, and which edits of the rule make a task easier."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rules.activity import Activity, ActivityRule, activity_type, judge_activity
from rules.horizon import RuleField, makes_easier

pytestmark = pytest.mark.unit

OPENS = datetime(2027, 3, 1, 7, 0, tzinfo=UTC)
CLOSES = OPENS + timedelta(hours=1)
INSIDE = OPENS + timedelta(minutes=30)
RUN_TYPES = ActivityRule(frozenset({"run", "trail run"}))
RUN = ActivityRule(frozenset({"run", "trail run"}), min_duration_seconds=600, min_distance_meters=3000)


def run(
    at: datetime = INSIDE,
    kind: str | None = "run",
    duration: float | None = 1800,
    distance: float | None = 5000,
) -> Activity:
    """A run that counts against RUN unless told otherwise."""
    return Activity(occurred_at=at, activity_type=kind, duration_seconds=duration, distance_meters=distance)


def rule(*types: str, duration: float = 0.0, distance: float = 0.0) -> ActivityRule:
    return ActivityRule(frozenset(types), min_duration_seconds=duration, min_distance_meters=distance)


def test_an_activity_that_keeps_every_rule_counts() -> None:
    assert judge_activity(RUN, run(), OPENS, CLOSES) is None
    assert judge_activity(RUN, run(kind="trail run", duration=600, distance=3000), OPENS, CLOSES) is None


@pytest.mark.parametrize(
    ("activity", "reason"),
    [
        (run(at=OPENS - timedelta(seconds=1)), "OCCURRED_OUTSIDE_WINDOW"),
        (run(at=CLOSES + timedelta(seconds=1)), "OCCURRED_OUTSIDE_WINDOW"),
        (run(kind="ride"), "ACTIVITY_MISMATCH"),
        (run(kind=None), "ACTIVITY_MISMATCH"),  # a rule that lists types wants one of them
        (run(duration=599.9), "TOO_SHORT"),
        (run(duration=None), "TOO_SHORT"),
        (run(distance=2999.9), "BELOW_MIN_DISTANCE"),
        (run(distance=None), "BELOW_MIN_DISTANCE"),
    ],
)
def test_each_broken_rule_is_its_reason(activity: Activity, reason: str) -> None:
    assert judge_activity(RUN, activity, OPENS, CLOSES) == reason


@pytest.mark.parametrize(
    ("activity", "reason"),
    [
        # outside the window comes first, whatever else is wrong
        (
            run(at=CLOSES + timedelta(minutes=1), kind="ride", duration=1, distance=1),
            "OCCURRED_OUTSIDE_WINDOW",
        ),
        (run(kind="ride", duration=1, distance=1), "ACTIVITY_MISMATCH"),
        (run(duration=1, distance=1), "TOO_SHORT"),
    ],
)
def test_the_first_broken_rule_is_named(activity: Activity, reason: str) -> None:
    assert judge_activity(RUN, activity, OPENS, CLOSES) == reason


@pytest.mark.parametrize("at", [OPENS, CLOSES])
def test_both_ends_of_the_window_are_inside(at: datetime) -> None:
    assert judge_activity(RUN, run(at=at), OPENS, CLOSES) is None


@pytest.mark.parametrize("kind", ["run", "ride", "meditation", None])
def test_no_types_listed_means_any_type_counts(kind: str | None) -> None:
    assert judge_activity(rule(duration=600), run(kind=kind), OPENS, CLOSES) is None


def test_no_minimum_accepts_an_activity_that_reports_neither_duration_nor_distance() -> None:
    assert judge_activity(rule("run"), run(duration=None, distance=None), OPENS, CLOSES) is None


@pytest.mark.parametrize(
    ("given", "spelled"),
    [
        ("run", "run"),
        ("Run", "run"),
        ("RUN", "run"),
        ("  Trail Run ", "trail run"),
        ("\tTRAIL run\n", "trail run"),
    ],
)
def test_a_type_has_one_spelling_and_counts_in_it(given: str, spelled: str) -> None:
    assert activity_type(given) == spelled
    assert judge_activity(RUN, run(kind=activity_type(given)), OPENS, CLOSES) is None


def test_the_rule_compares_types_as_spelled() -> None:
    """Rule and activity both arrive spelled the one way; judge_activity does not respell them."""
    listed = rule(*(activity_type(t) for t in (" RUN", "Trail Run", "run")))
    assert listed == RUN_TYPES
    assert judge_activity(listed, run(kind="trail run"), OPENS, CLOSES) is None
    assert judge_activity(RUN, run(kind="Run"), OPENS, CLOSES) == "ACTIVITY_MISMATCH"
    assert judge_activity(RUN, run(kind=" run"), OPENS, CLOSES) == "ACTIVITY_MISMATCH"


@pytest.mark.parametrize(
    ("old", "new", "easier"),
    [
        # types: another one listed, or none at all (any type), accepts what the old list refused
        (rule("run"), rule("run", "walk"), True),
        (rule("run"), rule("walk"), True),
        (rule("run", "walk"), rule(), True),
        (rule("run", "walk"), rule("run"), False),
        (rule(), rule("run"), False),  # from any type to a list: harder
        (rule(), rule(), False),
        (rule("run", "walk"), rule("walk", "run"), False),
        # minimums: lower is easier, higher is not
        (rule("run", duration=600), rule("run", duration=300), True),
        (rule("run", duration=600), rule("run", duration=0), True),
        (rule("run", duration=600), rule("run", duration=900), False),
        (rule("run", distance=3000), rule("run", distance=100), True),
        (rule("run", distance=3000), rule("run", distance=5000), False),
        (RUN, RUN, False),
        # one field easier is enough, whatever the others do
        (rule("run", duration=600), rule("run", "walk", duration=900), True),
        (rule("run", distance=3000), rule(duration=900, distance=2000), True),
        (rule("run", "walk", duration=600, distance=3000), rule("run", duration=900, distance=5000), False),
    ],
)
def test_which_rule_edits_make_a_task_easier(old: ActivityRule, new: ActivityRule, easier: bool) -> None:
    assert makes_easier(RuleField.ACTIVITY, old, new) is easier

"""When the API freezes its heap (web/heap.py): after a burst of subscriptions has settled, and thaws on a clock."""

from __future__ import annotations

import pytest

from web.heap import FreezePolicy

pytestmark = pytest.mark.unit


def test_a_burst_is_frozen_once_it_has_settled() -> None:
    policy = FreezePolicy(after_new=100, thaw_seconds=600)
    assert policy.decide(0, 0) is None
    assert policy.decide(60, 1) is None  # still arriving
    assert policy.decide(150, 2) is None  # still arriving, past the threshold
    assert policy.decide(150, 3) == "freeze"  # no new one since the last tick
    assert policy.decide(150, 4) is None  # frozen already
    assert policy.decide(200, 5) is None
    assert policy.decide(200, 6) is None  # 50 new since the freeze: below the threshold


def test_few_subscriptions_are_never_frozen() -> None:
    policy = FreezePolicy(after_new=100, thaw_seconds=600)
    assert [policy.decide(total, t) for t, total in enumerate([10, 20, 20, 99, 99])] == [None] * 5


def test_a_frozen_heap_thaws_on_its_clock_and_the_next_burst_freezes_again() -> None:
    policy = FreezePolicy(after_new=100, thaw_seconds=600)
    policy.decide(500, 0)
    assert policy.decide(500, 1) == "freeze"
    assert policy.decide(500, 300) is None
    assert policy.decide(500, 601) == "thaw"  # a full collection frees ended subscriptions' cycles
    assert policy.decide(500, 700) is None
    assert policy.decide(650, 701) is None
    assert policy.decide(650, 702) == "freeze"
    assert policy.decide(650, 1201) == "thaw"

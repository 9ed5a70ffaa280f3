"""A batch observed at once yields the same series as each value observed alone."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Histogram

from observability.metrics import LATENESS_BUCKETS, observe_many

pytestmark = pytest.mark.unit

# on, between and past the bounds, and past the last one (+Inf)
VALUES = [0.0, 0.05, 0.051, 0.1, 0.3, 0.3, 1.0, 4.9, 5.0, 59.0, 3600.0, 7200.5]


def _samples(histogram: Histogram) -> dict[tuple[str, str], float]:
    return {
        (s.name, s.labels.get("le", "")): s.value
        for metric in histogram.collect()
        for s in metric.samples
        if not s.name.endswith("_created")
    }


def test_a_batch_fills_the_same_buckets_count_and_sum_as_one_by_one() -> None:
    one_by_one = Histogram("late_one", "", buckets=LATENESS_BUCKETS, registry=CollectorRegistry())
    batched = Histogram("late_batch", "", buckets=LATENESS_BUCKETS, registry=CollectorRegistry())
    for value in VALUES:
        one_by_one.observe(value)
    observe_many(batched, VALUES)
    expected = {(n.replace("late_one", "late_batch"), le): v for (n, le), v in _samples(one_by_one).items()}
    assert _samples(batched) == expected
    assert expected[("late_batch_count", "")] == len(VALUES)


def test_an_empty_batch_observes_nothing() -> None:
    histogram = Histogram("late_none", "", buckets=LATENESS_BUCKETS, registry=CollectorRegistry())
    observe_many(histogram, [])
    assert _samples(histogram)[("late_none_count", "")] == 0

"""Avoid-a-place goals: staying out of a geofence for a whole window, judged from the owner's location
samples. Pure: services/chain/avoidance.py applies it at the deadline.

A sample counts as inside only when its whole accuracy circle is (distance + accuracy <= radius): a vague
fix near the edge never convicts anyone. Staying out is proved by coverage: from the window's opening to
its close, no stretch longer than the rule's maximum gap without an accepted sample (the opening to the
first sample and the last sample to the close included), and at least one sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise


@dataclass(frozen=True)
class Sample:
    at: datetime  # when the phone recorded it (inside the window; checked when it arrived)
    inside: bool


@dataclass(frozen=True)
class AvoidVerdict:
    reason: str | None  # a RejectionReason's name; None: stayed out, and the samples show it
    entered_at: datetime | None  # ENTERED_AVOIDED_PLACE: the first sample inside
    longest_gap_seconds: float


def certainly_inside(distance_meters: float, accuracy_meters: float, radius_meters: float) -> bool:
    return distance_meters + accuracy_meters <= radius_meters


def judge_avoidance(
    samples: Sequence[Sample], opens_at: datetime, closes_at: datetime, max_gap_seconds: float
) -> AvoidVerdict:
    ordered = sorted(samples, key=lambda s: s.at)
    entered = next((s.at for s in ordered if s.inside), None)
    marks = [opens_at, *(s.at for s in ordered), closes_at]
    longest = max((later - earlier).total_seconds() for earlier, later in pairwise(marks))
    if entered is not None:
        return AvoidVerdict("ENTERED_AVOIDED_PLACE", entered, longest)
    if not ordered or longest > max_gap_seconds:  # no sample at all proves nothing, however short the window
        return AvoidVerdict("NOT_ENOUGH_SAMPLES", None, longest)
    return AvoidVerdict(None, None, longest)

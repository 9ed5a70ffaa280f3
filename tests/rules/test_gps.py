from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rules.gps import (
    GpsFix,
    GpsRule,
    InvalidInput,
    haversine_meters,
    judge_check_in,
    validate_point,
)

pytestmark = pytest.mark.unit

NOON = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
GYM = GpsRule(latitude=52.52, longitude=13.405, radius_meters=100, max_accuracy_meters=50)
METERS_PER_DEGREE_LAT = 111_195.0


def fix_north_of(rule: GpsRule, meters: float, accuracy: float = 10, at: datetime = NOON) -> GpsFix:
    return GpsFix(rule.latitude + meters / METERS_PER_DEGREE_LAT, rule.longitude, accuracy, at)


def test_haversine_known_distance() -> None:
    berlin_to_paris = haversine_meters(52.5200, 13.4050, 48.8566, 2.3522)
    assert berlin_to_paris == pytest.approx(877_500, rel=0.005)
    assert haversine_meters(0, 179.9999, 0, -179.9999) == pytest.approx(22.2, abs=0.1)


latitudes = st.floats(-90, 90)
longitudes = st.floats(-180, 180)


@given(latitudes, longitudes, latitudes, longitudes)
def test_haversine_is_symmetric_and_bounded(lat1: float, lon1: float, lat2: float, lon2: float) -> None:
    there = haversine_meters(lat1, lon1, lat2, lon2)
    assert there == pytest.approx(haversine_meters(lat2, lon2, lat1, lon1), abs=1e-6)
    assert 0 <= there <= math.pi * 6_371_008.8 + 1


@pytest.mark.parametrize(
    ("latitude", "longitude", "field"),
    [
        (90.01, 0, "location.latitude"),
        (-91, 0, "location.latitude"),
        (math.nan, 0, "location.latitude"),
        (math.inf, 0, "location.latitude"),
        (0, 180.5, "location.longitude"),
        (0, -math.inf, "location.longitude"),
        (0, math.nan, "location.longitude"),
    ],
)
def test_out_of_range_coordinates_are_refused(latitude: float, longitude: float, field: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        validate_point(latitude, longitude, "location")
    assert raised.value.field == field


def test_edge_coordinates_are_valid() -> None:
    validate_point(90, 180, "location")
    validate_point(-90, -180, "location")


def test_inside_is_accepted_with_distance() -> None:
    decision = judge_check_in(GYM, fix_north_of(GYM, 40), None, max_speed_kmh=300)
    assert decision.accepted
    assert decision.reason is None
    assert decision.distance_meters == pytest.approx(40, abs=0.5)


def test_low_accuracy_comes_first() -> None:
    decision = judge_check_in(GYM, fix_north_of(GYM, 5_000, accuracy=51), None, max_speed_kmh=300)
    assert (decision.accepted, decision.reason) == (False, "LOW_ACCURACY")
    nan_accuracy = fix_north_of(GYM, 0, accuracy=math.nan)
    assert judge_check_in(GYM, nan_accuracy, None, max_speed_kmh=300).reason == "LOW_ACCURACY"


def test_accuracy_stretches_the_fence_by_half_at_most_half_the_radius() -> None:
    assert judge_check_in(GYM, fix_north_of(GYM, 119, accuracy=40), None, max_speed_kmh=300).accepted
    outside = judge_check_in(GYM, fix_north_of(GYM, 122, accuracy=40), None, max_speed_kmh=300)
    assert outside.reason == "OUTSIDE_GEOFENCE"
    small = GpsRule(52.52, 13.405, radius_meters=20, max_accuracy_meters=100)
    assert judge_check_in(small, fix_north_of(small, 29, accuracy=100), None, max_speed_kmh=300).accepted
    assert not judge_check_in(small, fix_north_of(small, 31, accuracy=100), None, max_speed_kmh=300).accepted
    assert judge_check_in(small, fix_north_of(small, 0, accuracy=100), None, max_speed_kmh=300).accepted


def test_teleport_from_previous_check_in_is_implausible() -> None:
    previous = GpsFix(48.8566, 2.3522, 10, NOON - timedelta(minutes=30))  # Paris, half an hour earlier
    decision = judge_check_in(GYM, fix_north_of(GYM, 0), previous, max_speed_kmh=300)
    assert (decision.accepted, decision.reason) == (False, "IMPLAUSIBLE_LOCATION")


def test_travel_within_speed_limit_is_plausible() -> None:
    previous = GpsFix(48.8566, 2.3522, 10, NOON - timedelta(hours=3))  # ~877 km in 3 h ~ 292 km/h
    assert judge_check_in(GYM, fix_north_of(GYM, 0), previous, max_speed_kmh=300).accepted


def test_accuracies_are_subtracted_and_tiny_intervals_do_not_divide_by_zero() -> None:
    jittery = fix_north_of(GYM, 60, accuracy=30, at=NOON)
    assert judge_check_in(GYM, fix_north_of(GYM, 0, accuracy=30), jittery, max_speed_kmh=5).accepted
    far = fix_north_of(GYM, 2_000, accuracy=10, at=NOON)
    assert judge_check_in(GYM, fix_north_of(GYM, 0), far, max_speed_kmh=300).reason == "IMPLAUSIBLE_LOCATION"


def test_implausible_is_judged_before_geofence() -> None:
    previous = GpsFix(48.8566, 2.3522, 10, NOON - timedelta(minutes=1))
    decision = judge_check_in(GYM, fix_north_of(GYM, 10_000), previous, max_speed_kmh=300)
    assert decision.reason == "IMPLAUSIBLE_LOCATION"


def test_an_implausible_fix_says_how_much_later_it_would_pass() -> None:
    previous = fix_north_of(GYM, 0, accuracy=10)

    def judged(seconds: int) -> tuple[str | None, int | None]:
        far = fix_north_of(GYM, 10_020, accuracy=10, at=NOON + timedelta(seconds=seconds))  # ~10 km travelled
        decision = judge_check_in(GYM, far, previous, max_speed_kmh=250)
        return decision.reason, decision.retry_after_seconds

    reason, wait = judged(10)
    assert reason == "IMPLAUSIBLE_LOCATION" and wait is not None and 130 <= wait <= 140  # 10 km at 250 km/h
    assert judged(10 + wait - 1) == ("IMPLAUSIBLE_LOCATION", 1)
    assert judged(10 + wait) == ("OUTSIDE_GEOFENCE", None)
    assert judge_check_in(GYM, previous, None, max_speed_kmh=250).retry_after_seconds is None

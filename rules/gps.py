from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from rules.errors import InvalidInput

__all__ = [
    "EARTH_RADIUS_METERS",
    "GpsDecision",
    "GpsFix",
    "GpsRule",
    "InvalidInput",
    "haversine_meters",
    "judge_check_in",
    "seconds_until_plausible",
    "validate_point",
]

EARTH_RADIUS_METERS = 6_371_008.8  # IUGG mean radius
# Two fixes closer in time than this are judged as if this far apart: clocks and fixes jitter.
MIN_SPEED_INTERVAL_SECONDS = 1.0


@dataclass(frozen=True)
class GpsRule:
    latitude: float
    longitude: float
    radius_meters: float
    max_accuracy_meters: float


@dataclass(frozen=True)
class GpsFix:
    latitude: float
    longitude: float
    accuracy_meters: float
    at: datetime


@dataclass(frozen=True)
class GpsDecision:
    accepted: bool
    reason: str | None
    distance_meters: float
    retry_after_seconds: int | None = None  # IMPLAUSIBLE_LOCATION: when the same fix would be plausible


def validate_point(latitude: float, longitude: float, field: str) -> None:
    """Refuse coordinates that are not finite or out of range (NaN fails every comparison)."""
    if not -90.0 <= latitude <= 90.0:
        raise InvalidInput(f"{field}.latitude", "must be a number between -90 and 90")
    if not -180.0 <= longitude <= 180.0:
        raise InvalidInput(f"{field}.longitude", "must be a number between -180 and 180")


def haversine_meters(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance on a spherical Earth (error < 0.5%, plenty for geofences)."""
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    d_phi = phi2 - phi1
    d_lambda = math.radians(lon2 - lon1)
    h = math.sin(d_phi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(d_lambda / 2) ** 2
    return 2 * EARTH_RADIUS_METERS * math.asin(min(1.0, math.sqrt(h)))


def seconds_until_plausible(previous: GpsFix, fix: GpsFix, *, max_speed_kmh: float) -> int:
    """How much later than `fix.at` the same fix would be a plausible move from `previous` (0: it is now)."""
    apart = haversine_meters(previous.latitude, previous.longitude, fix.latitude, fix.longitude)
    # Each fix may be off by its accuracy, so only the distance beyond both circles is proven travel.
    travelled = apart - previous.accuracy_meters - fix.accuracy_meters
    if travelled <= 0:
        return 0
    elapsed = abs((fix.at - previous.at).total_seconds())
    if travelled / max(elapsed, MIN_SPEED_INTERVAL_SECONDS) <= max_speed_kmh / 3.6:
        return 0
    return max(1, math.ceil(travelled / (max_speed_kmh / 3.6) - elapsed))


def within_geofence(distance_meters: float, accuracy_meters: float, radius_meters: float) -> bool:
    """Accept when the fix's centre is within radius + half its accuracy, that half capped at half the radius.

    The reported point is the best estimate; a genuine user standing on the edge whose fix drifts outward
    is still accepted most of the time, while a poor fix can stretch the fence by at most half its radius
    (a fix right on the centre is accepted whatever its accuracy, unlike an "area mostly inside" rule).
    """
    slack = min(accuracy_meters, radius_meters) / 2
    return distance_meters <= radius_meters + slack


def judge_check_in(
    rule: GpsRule, fix: GpsFix, previous: GpsFix | None, *, max_speed_kmh: float
) -> GpsDecision:
    """Decide a check-in: LOW_ACCURACY, then IMPLAUSIBLE_LOCATION, then OUTSIDE_GEOFENCE.

    `previous` is the user's last ACCEPTED fix: a refused one may be the very error a retry corrects.
    """
    distance = haversine_meters(rule.latitude, rule.longitude, fix.latitude, fix.longitude)
    # Written as "not <=" so a NaN accuracy counts as low accuracy.
    if not fix.accuracy_meters <= rule.max_accuracy_meters:
        return GpsDecision(False, "LOW_ACCURACY", distance)
    wait = 0 if previous is None else seconds_until_plausible(previous, fix, max_speed_kmh=max_speed_kmh)
    if wait:
        return GpsDecision(False, "IMPLAUSIBLE_LOCATION", distance, retry_after_seconds=wait)
    if not within_geofence(distance, max(fix.accuracy_meters, 0.0), rule.radius_meters):
        return GpsDecision(False, "OUTSIDE_GEOFENCE", distance)
    return GpsDecision(True, None, distance)

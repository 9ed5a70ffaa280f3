"""The one way an instant is written out: UTC with a Z, whole seconds when whole, exact otherwise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from services.kit.instants import format_instant

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("at", "written"),
    [
        (datetime(2027, 3, 28, 7, 0, tzinfo=ZoneInfo("Europe/Berlin")), "2027-03-28T05:00:00Z"),
        (datetime(2027, 10, 31, 2, 30, fold=1, tzinfo=ZoneInfo("Europe/Berlin")), "2027-10-31T01:30:00Z"),
        (
            datetime(2027, 1, 1, 5, 30, tzinfo=timezone(timedelta(hours=5, minutes=30))),
            "2027-01-01T00:00:00Z",
        ),
        (datetime(2027, 1, 1, 0, 0, 0, 250000, tzinfo=UTC), "2027-01-01T00:00:00.250000Z"),
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00Z"),
    ],
)
def test_an_instant_is_written_in_utc_with_a_z(at: datetime, written: str) -> None:
    assert format_instant(at) == written
    # timestamps, not ==: an aware value with fold=1 never equals one of another zone (PEP 495)
    assert datetime.fromisoformat(written).timestamp() == at.timestamp()


def test_a_value_without_an_offset_is_refused() -> None:
    with pytest.raises(ValueError, match="no offset"):
        format_instant(datetime(2027, 1, 1, 7, 0))

"""Which time zone names a user or a schedule may use: real IANA zones of places, and UTC.

`ZoneInfo` opens whatever file the name points at, so a directory ("Europe"), an over-long name, the
meaningless `Factory` zone or the leap-second `right/...` copies must be refused before it is asked. The
database's legacy names without an area are refused too: `EST`, `MST` and `HST` are fixed offsets that keep
no daylight saving time (a user who picks `EST` for New York is an hour off half the year), and the rest
(`Japan`, `GB`, `EST5EDT`…) have an `Area/Location` name, which is what browsers and phones report.
"""

from __future__ import annotations

from functools import lru_cache
from zoneinfo import ZoneInfo, available_timezones

from rules.errors import InvalidInput

MAX_ZONE_NAME = 64
# Present in the zone database but not places: their clocks mean nothing to a user.
_NOT_PLACES = frozenset({"Factory", "localtime", "posixrules"})


@lru_cache(maxsize=1)
def _zone_names() -> frozenset[str]:
    return frozenset(
        name
        for name in available_timezones()
        if name not in _NOT_PLACES
        and not name.startswith(("right/", "posix/"))
        and ("/" in name or name == "UTC")
    )


def is_zone_name(name: str) -> bool:
    """Whether `name` is a zone a user or a schedule may use."""
    return len(name) <= MAX_ZONE_NAME and name in _zone_names()


def zone_of(name: str, field: str) -> ZoneInfo:
    """The zone called `name`, or InvalidInput naming `field`."""
    if not is_zone_name(name):
        raise InvalidInput(field, f"{name[:MAX_ZONE_NAME]!r} is not an IANA time zone name")
    return ZoneInfo(name)

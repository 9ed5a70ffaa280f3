"""A brute-force RFC 5545 (3.3.10, 3.3.5) expander, written from the RFC's text for differential tests.

It walks every period of the rule in turn (each year, month, week, day, hour, minute or second from
DTSTART's, INTERVAL apart), lists every candidate of the period by the expand/limit table of 3.3.10,
keeps those at or after DTSTART, then turns wall times into instants by searching the zone's offsets.
Slow on purpose: nothing here is shared with rules/.
"""

from __future__ import annotations

from calendar import monthrange
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
UNITS = {"HOURLY": 3600, "MINUTELY": 60, "SECONDLY": 1}


class TooLong(Exception):
    """The brute force would take too long for this rule: the caller skips it."""


@dataclass
class Parts:
    freq: str
    interval: int = 1
    count: int | None = None
    until: str | None = None
    wkst: str = "MO"
    bymonth: list[int] | None = None
    bymonthday: list[int] | None = None
    byday: list[str] | None = None
    byhour: list[int] | None = None
    byminute: list[int] | None = None
    bysecond: list[int] | None = None

    def text(self) -> str:
        out = [f"FREQ={self.freq}"]
        if self.interval != 1:
            out.append(f"INTERVAL={self.interval}")
        for name in ("count", "until", "bymonth", "bymonthday", "byday", "byhour", "byminute", "bysecond"):
            value = getattr(self, name)
            if value is not None:
                out.append(
                    f"{name.upper()}={','.join(map(str, value)) if isinstance(value, list) else value}"
                )
        if self.wkst != "MO":
            out.append(f"WKST={self.wkst}")
        return ";".join(out)


def _nth_in(days: list[date], day: date) -> tuple[int, int]:
    """Position of `day` among the days of its scope with the same weekday, from the start and the end."""
    same = [d for d in days if d.weekday() == day.weekday()]
    index = same.index(day)
    return index + 1, index - len(same)


def _byday_ok(p: Parts, day: date) -> bool:
    if p.byday is None:
        return True
    in_month = p.freq == "MONTHLY" or (p.freq == "YEARLY" and p.bymonth is not None)
    return _byday_in_scope(tuple(p.byday), in_month, day)


@lru_cache(maxsize=100_000)
def _byday_in_scope(byday: tuple[str, ...], in_month: bool, day: date) -> bool:
    if in_month:
        scope = [date(day.year, day.month, n) for n in range(1, monthrange(day.year, day.month)[1] + 1)]
    else:
        scope = [
            date(day.year, 1, 1) + timedelta(days=n)
            for n in range(366 if monthrange(day.year, 2)[1] == 29 else 365)
        ]
    first, last = _nth_in(scope, day)
    for item in byday:
        code, ordinal = item[-2:], item[:-2]
        if DAYS.index(code) != day.weekday():
            continue
        if not ordinal or int(ordinal) in (first, last):
            return True
    return False


def _day_ok(p: Parts, day: date, dtstart: datetime) -> bool:
    if p.bymonth is not None and day.month not in p.bymonth:
        return False
    length = monthrange(day.year, day.month)[1]
    if p.bymonthday is not None and not any(n == day.day or length + n + 1 == day.day for n in p.bymonthday):
        return False
    if not _byday_ok(p, day):
        return False
    # what the rule leaves out comes from DTSTART ("derived from the Start Time")
    if p.freq == "WEEKLY" and p.byday is None:
        return day.weekday() == dtstart.weekday()
    if p.freq == "MONTHLY" and p.byday is None and p.bymonthday is None:
        return day.day == dtstart.day
    if p.freq == "YEARLY" and p.byday is None and p.bymonthday is None:
        return day.day == dtstart.day and (p.bymonth is not None or day.month == dtstart.month)
    return True


def _times(p: Parts, dtstart: datetime) -> list[time]:
    return [
        time(h, m, s)
        for h in (p.byhour or [dtstart.hour])
        for m in (p.byminute or [dtstart.minute])
        for s in (p.bysecond or [dtstart.second])
    ]


def _period_days(p: Parts, dtstart: datetime, i: int) -> list[date]:
    d0 = dtstart.date()
    if p.freq == "YEARLY":
        year = d0.year + i * p.interval
        if year > 9998:
            raise StopIteration
        return [
            date(year, 1, 1) + timedelta(days=n) for n in range(366 if monthrange(year, 2)[1] == 29 else 365)
        ]
    if p.freq == "MONTHLY":
        index = d0.year * 12 + d0.month - 1 + i * p.interval
        year, month = divmod(index, 12)
        if year > 9998:
            raise StopIteration
        return [date(year, month + 1, n) for n in range(1, monthrange(year, month + 1)[1] + 1)]
    if p.freq == "WEEKLY":
        start = d0 - timedelta(days=(d0.weekday() - DAYS.index(p.wkst)) % 7) + timedelta(weeks=i * p.interval)
        return [start + timedelta(days=n) for n in range(7)]
    return [d0 + timedelta(days=i * p.interval)]


def walls(p: Parts, dtstart: datetime, periods: int, enough: int) -> list[datetime]:
    """Wall times of the rule from DTSTART on, over the first `periods` periods (no COUNT/UNTIL), stopping
    one whole day after `enough` of them (a day later no wall time can map before them)."""
    out: list[datetime] = []
    for i in range(periods):
        if len(out) >= enough and out[-1] - out[enough - 1] > timedelta(days=2):
            break
        if p.freq in UNITS:
            unit = UNITS[p.freq]
            origin = datetime.combine(dtstart.date(), time()) + timedelta(
                seconds=(dtstart.hour * 3600 + dtstart.minute * 60 + dtstart.second) // unit * unit
            )
            period = origin + timedelta(seconds=i * unit * p.interval)
            if period.year > 9998:
                break
            if not _day_ok(p, period.date(), dtstart):
                continue
            if p.byhour is not None and period.hour not in p.byhour:
                continue
            if (
                p.freq in ("MINUTELY", "SECONDLY")
                and p.byminute is not None
                and period.minute not in p.byminute
            ):
                continue
            if p.freq == "SECONDLY" and p.bysecond is not None and period.second not in p.bysecond:
                continue
            minutes = [period.minute] if p.freq != "HOURLY" else (p.byminute or [dtstart.minute])
            seconds = [period.second] if p.freq == "SECONDLY" else (p.bysecond or [dtstart.second])
            candidates = [period.replace(minute=m, second=s) for m in minutes for s in seconds]
        else:
            try:
                days = _period_days(p, dtstart, i)
            except StopIteration:
                break
            candidates = [
                datetime.combine(d, t) for d in days if _day_ok(p, d, dtstart) for t in _times(p, dtstart)
            ]
        out.extend(sorted(c for c in candidates if c >= dtstart))
    return out


def to_instant(wall: datetime, zone: ZoneInfo) -> datetime:
    """RFC 5545 3.3.5: the instant whose local time is `wall`; the first of two; past a gap, the offset
    from before the gap (so the time moves forward by the gap)."""
    offsets = {(wall + timedelta(hours=h)).replace(tzinfo=zone).utcoffset() for h in range(-30, 31, 6)} - {
        None
    }
    found = sorted(
        (wall - offset).replace(tzinfo=UTC)
        for offset in offsets
        if offset is not None
        and (wall - offset).replace(tzinfo=UTC).astimezone(zone).replace(tzinfo=None) == wall
    )
    if found:
        return found[0]
    before = min(
        (t for t in (wall - timedelta(hours=h) for h in range(1, 48)) if to_exists(t, zone)),
        key=lambda t: wall - t,
    )
    offset = before.replace(tzinfo=zone).utcoffset()
    assert offset is not None
    return (wall - offset).replace(tzinfo=UTC)


def to_exists(wall: datetime, zone: ZoneInfo) -> bool:
    return wall.replace(tzinfo=zone).astimezone(UTC).astimezone(zone).replace(tzinfo=None) == wall


def expand(
    p: Parts, starts_at: datetime, zone_name: str, periods: int, enough: int = 40, with_dtstart: bool = True
) -> list[datetime]:
    """The recurrence set as UTC instants, DTSTART first ("always the first instance"), COUNT and UNTIL
    applied; with_dtstart=False gives what the rule itself produces."""
    zone = ZoneInfo(zone_name)
    has_by = any(
        getattr(p, n) is not None
        for n in ("bymonth", "bymonthday", "byday", "byhour", "byminute", "bysecond")
    )
    if p.freq in UNITS and not has_by:  # our documented choice: plain sub-daily rules step in UTC
        stride = timedelta(seconds=UNITS[p.freq] * p.interval)
        instants = [starts_at.astimezone(UTC) + stride * i for i in range(periods)]
    else:
        dtstart = starts_at.astimezone(zone).replace(tzinfo=None)
        instants = [
            starts_at.astimezone(UTC) if w == dtstart else to_instant(w, zone)
            for w in walls(p, dtstart, periods, enough)
        ]
        if with_dtstart:
            instants.append(starts_at.astimezone(UTC))
    ordered = sorted({i for i in instants if i >= starts_at})
    if p.until is not None:
        ordered = [i for i in ordered if i <= until_instant(p.until, zone)]
    return ordered[: p.count] if p.count is not None else ordered


def until_instant(text: str, zone: ZoneInfo) -> datetime:
    if len(text) == 8:
        return datetime.strptime(text + "235959", "%Y%m%d%H%M%S").replace(tzinfo=zone).astimezone(UTC)
    if text.endswith("Z"):
        return datetime.strptime(text[:-1], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    return datetime.strptime(text, "%Y%m%dT%H%M%S").replace(tzinfo=zone).astimezone(UTC)

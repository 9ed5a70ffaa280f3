"""Progress of a task or a user: what a partner reads to cheer (or nudge) the owner."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import strawberry

from models import InstanceStatus as InstanceStatusRow
from schema.context import Info
from schema.types.instance import TaskInstance
from services.feed import CalendarAsk, DatedInstance, Scope, check_days, check_range
from services.feed import Completion as Counted


@strawberry.type
class Completion:
    days: int
    verified: int = strawberry.field(description="instances VERIFIED")
    settled: int = strawberry.field(
        description="instances VERIFIED, MISSED or REJECTED (CANCELED and EXCUSED excluded)"
    )

    @strawberry.field(description="verified / settled; null when nothing settled")
    def rate(self) -> float | None:
        return self.verified / self.settled if self.settled else None


@strawberry.type
class DayOutcome:
    date: dt.date
    entries: strawberry.Private[list[DatedInstance]]

    def _count(self, *statuses: InstanceStatusRow) -> int:
        return sum(1 for entry in self.entries if entry.row.status in statuses)

    @strawberry.field
    def verified(self) -> int:
        return self._count(InstanceStatusRow.VERIFIED)

    @strawberry.field
    def missed(self) -> int:
        return self._count(InstanceStatusRow.MISSED)

    @strawberry.field
    def rejected(self) -> int:
        return self._count(InstanceStatusRow.REJECTED)

    @strawberry.field
    def canceled(self) -> int:
        return self._count(InstanceStatusRow.CANCELED)

    @strawberry.field(description="PENDING or PENDING_REVIEW: not settled yet")
    def open(self) -> int:
        return self._count(InstanceStatusRow.PENDING, InstanceStatusRow.PENDING_REVIEW)

    @strawberry.field(description="the day's instances, by due time")
    def instances(self) -> list[TaskInstance]:
        return [TaskInstance(row=entry.row) for entry in self.entries]


@strawberry.type(
    description=(
        "VERIFIED counts as completed; VERIFIED, MISSED and REJECTED as settled; CANCELED and EXCUSED neither"
    )
)
class Progress:
    scope: strawberry.Private[Scope]

    async def _completion(self, info: Info, days: int) -> Counted:
        since = await info.context.now() - dt.timedelta(days=check_days(days))
        return await info.context.loaders.completion.load((self.scope, since))

    @strawberry.field(description="settled instances due in the last `days` days (1..366)")
    async def completion(self, info: Info, days: int) -> Completion:
        found = await self._completion(info, days)
        return Completion(days=days, verified=found.verified, settled=found.settled)

    @strawberry.field(description="completion(days).rate: null when nothing settled in the last `days` days")
    async def completion_rate(self, info: Info, days: int) -> float | None:
        return (await self._completion(info, days)).rate

    @strawberry.field(description="VERIFIED instances in a row, up to the latest settled one")
    async def current_streak(self, info: Info) -> int:
        return (await info.context.loaders.progress_streaks.load(self.scope)).current

    @strawberry.field(description="the longest run of VERIFIED instances ever")
    async def best_streak(self, info: Info) -> int:
        return (await info.context.loaders.progress_streaks.load(self.scope)).best

    @strawberry.field(
        description="each day `from`..`to` (at most 92): instances on their due date in their task's zone"
    )
    async def calendar(
        self, info: Info, from_: Annotated[dt.date, strawberry.argument(name="from")], to: dt.date
    ) -> list[DayOutcome]:
        check_range(from_, to)
        entries = await info.context.loaders.calendar.load(CalendarAsk(self.scope, from_, to))
        by_day: dict[dt.date, list[DatedInstance]] = {}
        for entry in entries:
            by_day.setdefault(entry.day, []).append(entry)
        days = (to - from_).days + 1
        return [
            DayOutcome(date=day, entries=by_day.get(day, []))
            for day in (from_ + dt.timedelta(days=n) for n in range(days))
        ]

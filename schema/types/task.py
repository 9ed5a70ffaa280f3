from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from models import QuotaPeriod as QuotaPeriodRow
from models import Task as TaskRow
from models import Weekday as WeekdayRow
from schema.context import Info
from schema.enums import (
    QuotaPeriod,
    ReminderAnchor,
    ReviewTimeoutPolicy,
    TaskState,
    VerificationMethod,
    Weekday,
)
from schema.media_rules import MediaRulesOfTask
from schema.types.integration import IntegrationRule
from schema.types.node import Node
from schema.types.pagination import PageInfo, page_request
from schema.types.pending_change import PendingChange, pending_change_of
from schema.types.task_break import TaskBreak
from schema.types.user import User, load_user
from services.chain import DEFAULT_MAX_SAMPLE_GAP_SECONDS
from services.feed import Scope, ScopeKind
from services.kit import check_page_size, global_id
from services.reminders import offsets_of
from services.tasks import INSTANCE_ORDER, InstancePage, activity_rule_of, upcoming_outside_breaks

if TYPE_CHECKING:
    from schema.types.instance import TaskInstance, TaskInstanceConnection
    from schema.types.progress import Progress


@strawberry.type
class GeoPoint:
    latitude: float
    longitude: float


@strawberry.type
class Schedule:
    starts_at: datetime
    rrule: str | None
    timezone: str = strawberry.field(
        description="IANA zone of the schedule's wall clock; every DateTime is UTC: show them in this zone"
    )
    window_seconds: int
    grace_seconds: int


@strawberry.type(description="a quota goal: `count` proofs per period, each period one instance")
class QuotaRule:
    count: int
    period: QuotaPeriod
    week_starts_on: Weekday | None = strawberry.field(description="WEEK: the day each week starts on")
    min_gap_seconds: int


@strawberry.type
class GpsRule:
    center: GeoPoint | None = strawberry.field(description="the owner's alone: null for partners")
    radius_meters: float
    max_accuracy_meters: float
    avoid: bool = strawberry.field(
        default=False, description="stay out of the geofence for the window (proved by reportLocations)"
    )
    max_sample_gap_seconds: int | None = strawberry.field(
        default=None, description="avoid: the longest stretch without a sample that still proves it"
    )


@strawberry.type
class PartnerRule:
    review_window_seconds: int
    on_timeout: ReviewTimeoutPolicy


@strawberry.type(description="a DUE_SOON event offsetSeconds before the window opens or the instance is due")
class Reminder:
    before: ReminderAnchor
    offset_seconds: int


@strawberry.type
class Task(MediaRulesOfTask, Node):
    row: strawberry.Private[TaskRow]

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(global_id("Task", self.row.id))

    @strawberry.field
    async def owner(self, info: Info) -> User:
        return await load_user(info, self.row.owner_id)

    @strawberry.field
    def title(self) -> str:
        return self.row.title

    @strawberry.field
    def description(self) -> str | None:
        return self.row.description

    @strawberry.field
    def method(self) -> VerificationMethod:
        return self.row.method

    @strawberry.field
    def schedule(self) -> Schedule:
        row = self.row
        return Schedule(
            starts_at=row.starts_at,
            rrule=row.rrule,
            timezone=row.timezone,
            window_seconds=row.window_seconds,
            grace_seconds=row.grace_seconds,
        )

    @strawberry.field
    async def gps(self, info: Info) -> GpsRule | None:
        row = self.row
        if row.gps_radius_meters is None or row.gps_latitude is None or row.gps_longitude is None:
            return None
        viewer = await info.context.viewer()
        owner = viewer.id == row.owner_id
        return GpsRule(
            center=GeoPoint(latitude=row.gps_latitude, longitude=row.gps_longitude) if owner else None,
            radius_meters=row.gps_radius_meters,
            max_accuracy_meters=row.gps_max_accuracy_meters or 0.0,
            avoid=row.gps_avoid,
            max_sample_gap_seconds=(row.gps_max_sample_gap_seconds or DEFAULT_MAX_SAMPLE_GAP_SECONDS)
            if row.gps_avoid
            else None,
        )

    @strawberry.field(description="a quota goal's rule; null for a task with a fixed schedule")
    def quota(self) -> QuotaRule | None:
        row = self.row
        if row.quota_count is None or row.quota_period is None:
            return None
        week = row.quota_week_start if row.quota_period is QuotaPeriodRow.WEEK else None
        return QuotaRule(
            count=row.quota_count,
            period=row.quota_period,
            week_starts_on=WeekdayRow(week) if week else None,
            min_gap_seconds=row.quota_min_gap_seconds or 0,
        )

    @strawberry.field
    def partner_review(self) -> PartnerRule | None:
        row = self.row
        if row.review_window_seconds is None or row.review_on_timeout is None:
            return None
        return PartnerRule(review_window_seconds=row.review_window_seconds, on_timeout=row.review_on_timeout)

    @strawberry.field(description="INTEGRATION: the rule reported activities are judged by")
    def integration(self) -> IntegrationRule | None:
        rule = activity_rule_of(self.row)
        return IntegrationRule(row=self.row, rule=rule) if rule is not None else None

    @strawberry.field(description="the owner's alone: empty for partners")
    async def reminders(self, info: Info) -> list[Reminder]:
        if (await info.context.viewer()).id != self.row.owner_id:
            return []
        return [Reminder(before=o.anchor, offset_seconds=o.offset_seconds) for o in offsets_of(self.row)]

    @strawberry.field
    def state(self) -> TaskState:
        return self.row.state

    @strawberry.field(
        description=(
            "the revision of how its instances are judged and scheduled, bumped by every edit that changes "
            "it (when the edit applies, after any wait): each verdict names the revision that judged it"
        )
    )
    def rule_revision(self) -> int:
        return self.row.rule_revision

    @strawberry.field(description="the unsettled instance the chain fires next")
    async def current_instance(
        self, info: Info
    ) -> Annotated[TaskInstance, strawberry.lazy("schema.types.instance")] | None:
        from schema.types.instance import TaskInstance  # noqa: PLC0415 - instance.py imports this module

        row = await info.context.loaders.open_instance.load(str(self.row.id))
        return TaskInstance(row=row, task_row=self.row) if row else None

    @strawberry.field(description="newest first; first/last <= 100")
    async def instances(
        self,
        info: Info,
        first: int | None = 20,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> Annotated[TaskInstanceConnection, strawberry.lazy("schema.types.instance")]:
        from schema.types.instance import TaskInstanceConnection  # noqa: PLC0415 - instance.py imports this module

        request = page_request(
            info, INSTANCE_ORDER, first=first, after=after, last=last, before=before, default=20
        )
        # a partner reads the history from the partnership's start
        closes_from = (await info.context.access()).history_start(self.row.owner_id)
        return TaskInstanceConnection(
            task_row=self.row, page=InstancePage(str(self.row.id), request, closes_from)
        )

    @strawberry.field(description="the next due times the schedule will produce, in order")
    async def upcoming(self, info: Info, first: int | None = 5) -> list[datetime]:
        first = check_page_size(5 if first is None else first)
        if self.row.state.value == "ENDED" or self.row.deleted_at is not None:
            return []
        info.context.spend_upcoming(first)
        # those inside a planned break are not due: left out
        return await upcoming_outside_breaks(
            self.row, await info.context.now(), first, info.context.policies.chain
        )

    @strawberry.field(description="planned breaks that are not over, earliest first; owner and partners")
    async def breaks(self, info: Info) -> list[TaskBreak]:
        return [TaskBreak(row=row) for row in await info.context.loaders.breaks.load(str(self.row.id))]

    @strawberry.field(description="consecutive VERIFIED instances, counted back from the latest settled one")
    async def streak(self, info: Info) -> int:
        return await info.context.loaders.streak.load(str(self.row.id))

    @strawberry.field(description="completion rates, streaks and a calendar of this task's instances")
    async def progress(self, info: Info) -> Annotated[Progress, strawberry.lazy("schema.types.progress")]:
        from schema.types.progress import Progress  # noqa: PLC0415 - it reaches this type through its instances

        # a partner reads it from the partnership's start, as the rest of the history (partners/access.py)
        since = (await info.context.access()).history_start(self.row.owner_id)
        return Progress(scope=Scope(ScopeKind.TASK, str(self.row.id), since=since))

    @strawberry.field(
        description="an easier edit waiting out the owner's commitment horizon; owner and active partners"
    )
    async def pending_change(self, info: Info) -> PendingChange | None:
        if self.row.pending_change is None:
            return None
        viewer = await info.context.viewer()
        return pending_change_of(self.row, owner=str(viewer.id) == str(self.row.owner_id))

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at


@strawberry.type
class TaskEdge:
    cursor: str
    node: Task


@strawberry.type
class TaskConnection:
    edges: list[TaskEdge]
    page_info: PageInfo
    count: strawberry.Private[Callable[[], Awaitable[int]]]

    @strawberry.field  # counted only when selected
    async def total_count(self) -> int:
        return await self.count()

"""Automatic proofs as the API shows them: a task's activity rule, what an event reported, and the
endpoint and secret a connection hands its owner once."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from models import Task as TaskRow
from rules.activity import ActivityRule
from schema.context import Info
from schema.links import absolute_url
from services.proofs import ActivityRecord, endpoint_path

if TYPE_CHECKING:
    from schema.types.task import Task


def endpoint_url(info: Info, key: str) -> str:
    return absolute_url(info, endpoint_path(key))


@strawberry.type(description="the activity rule an INTEGRATION task's events are judged by")
class PendingIntegrationRule:
    activity_types: list[str] = strawberry.field(description="empty: any type")
    min_duration_seconds: float
    min_distance_meters: float

    @classmethod
    def of(cls, rule: ActivityRule) -> PendingIntegrationRule:
        return cls(
            activity_types=sorted(rule.activity_types),
            min_duration_seconds=rule.min_duration_seconds,
            min_distance_meters=rule.min_distance_meters,
        )


@strawberry.type(description="which reported activities prove an instance, and whether events can arrive")
class IntegrationRule:
    row: strawberry.Private[TaskRow]
    rule: strawberry.Private[ActivityRule]

    @strawberry.field(description="compared case-insensitively; empty: any type")
    def activity_types(self) -> list[str]:
        return sorted(self.rule.activity_types)

    @strawberry.field(description="0: no minimum")
    def min_duration_seconds(self) -> float:
        return self.rule.min_duration_seconds

    @strawberry.field(description="0: no minimum")
    def min_distance_meters(self) -> float:
        return self.rule.min_distance_meters

    @strawberry.field(description="whether connectIntegration has given the task an endpoint and secret")
    def connected(self) -> bool:
        return self.row.integration_key is not None

    @strawberry.field(description="where events are POSTed; the owner's alone: null for partners")
    async def endpoint_url(self, info: Info) -> str | None:
        key = self.row.integration_key
        if key is None or str((await info.context.viewer()).id) != str(self.row.owner_id):
            return None
        return endpoint_url(info, key)


@strawberry.type(description="what an integration reported for an INTEGRATION proof")
class Activity:
    record: strawberry.Private[ActivityRecord]
    owner_id: strawberry.Private[str]

    @strawberry.field(description="the sender's name for itself (the event's source), e.g. garmin")
    def source(self) -> str:
        return self.record.source

    @strawberry.field(description="the activity's type as reported, lower-cased")
    def type(self) -> str | None:
        return self.record.activity_type

    @strawberry.field(description="when it happened (for an activity with a duration: when it ended)")
    def occurred_at(self) -> datetime:
        return self.record.occurred_at

    @strawberry.field
    def duration_seconds(self) -> float | None:
        return self.record.duration_seconds

    @strawberry.field
    def distance_meters(self) -> float | None:
        return self.record.distance_meters

    @strawberry.field(
        description="the event's id in the sender's system; the owner's alone (it may look the activity up)"
    )
    async def external_id(self, info: Info) -> str | None:
        viewer = await info.context.viewer()
        return self.record.external_id if str(viewer.id) == self.owner_id else None


@strawberry.type(description="a task's new event endpoint and secret, shown once; the previous pair stops")
class IntegrationConnection:
    task_row: strawberry.Private[TaskRow]
    endpoint_url: str = strawberry.field(description="POST signed events here")
    secret: str = strawberry.field(
        description="signs events: X-Proofloop-Signature: sha256=HMAC-SHA256(secret, timestamp + '.' + body)"
    )

    @strawberry.field
    def task(self) -> Annotated[Task, strawberry.lazy("schema.types.task")]:
        from schema.types.task import Task  # noqa: PLC0415 - task.py imports this module

        return Task(row=self.task_row)

from __future__ import annotations

import strawberry

from models import TaskInstance as TaskInstanceRow
from schema.types.instance import TaskInstance, TaskInstanceEdge
from schema.types.pagination import Count, PageInfo
from services.kit import Page
from services.tasks import AGENDA_ORDER


@strawberry.type(description="instances across tasks, by due time")
class AgendaConnection:
    edges: list[TaskInstanceEdge]
    page_info: PageInfo
    count: strawberry.Private[Count]

    @strawberry.field(description="instances in the range, of every page")
    async def total_count(self) -> int:
        return await self.count()  # only when selected

    @staticmethod
    def of(page: Page[TaskInstanceRow], count: Count) -> AgendaConnection:
        edges = [
            TaskInstanceEdge(cursor=AGENDA_ORDER.cursor(row), node=TaskInstance(row=row)) for row in page.rows
        ]
        return AgendaConnection(
            count=count,
            edges=edges,
            page_info=PageInfo.of(
                [edge.cursor for edge in edges],
                has_next_page=page.has_next_page,
                has_previous_page=page.has_previous_page,
            ),
        )


@strawberry.type(description="what a home screen's badges count, now")
class Badges:
    reviews_waiting: int = strawberry.field(
        description="proofs waiting for your review (reviewQueue, appeals aside)"
    )
    appeals_waiting: int = strawberry.field(description="appeals waiting for your decision")
    due_today: int = strawberry.field(
        description="your PENDING instances due on today's date in your profile's timezone"
    )

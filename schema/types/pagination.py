"""Relay connections: PageInfo, one generic edge and connection, and the arguments that ask for a page.

The paging rule itself (keyset, both directions, opaque cursors) is services/kit/paging.py's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import strawberry
from strawberry.types.nodes import convert_arguments

from schema.context import Info
from services.kit import Keyset, Page, PageRequest

Node = TypeVar("Node")
Row = TypeVar("Row")


@strawberry.type
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None

    @staticmethod
    def of(cursors: list[str], *, has_next_page: bool, has_previous_page: bool) -> PageInfo:
        """A page's info from its edges' cursors, in order: the one builder of every connection."""
        return PageInfo(
            has_next_page=has_next_page,
            has_previous_page=has_previous_page,
            start_cursor=cursors[0] if cursors else None,
            end_cursor=cursors[-1] if cursors else None,
        )


@strawberry.type
class Edge(Generic[Node]):
    cursor: str
    node: Node


Count = Callable[[], Awaitable[int]]


@strawberry.type
class Connection(Generic[Node]):
    edges: list[Edge[Node]]
    page_info: PageInfo
    count: strawberry.Private[Count]

    @strawberry.field(description="of every page, as the arguments other than paging narrow it")
    async def total_count(self) -> int:
        return await self.count()  # only when selected

    @staticmethod
    def of(page: Page[Row], keyset: Keyset, node: Callable[[Row], Node], count: Count) -> Connection[Node]:
        """A page as a connection; `count` counts every page (the query before the page narrows it)."""
        edges = [Edge(cursor=keyset.cursor(row), node=node(row)) for row in page.rows]
        return Connection(
            count=count,
            edges=edges,
            page_info=PageInfo.of(
                [edge.cursor for edge in edges],
                has_next_page=page.has_next_page,
                has_previous_page=page.has_previous_page,
            ),
        )


def page_request(
    info: Info,
    keyset: Keyset,
    *,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
    default: int,
) -> PageRequest:
    """The page Relay's arguments ask for; a `first` the client left to its default never clashes with
    `last` (a client paging back sends only `last`/`before`, and the schema still fills `first` in)."""
    given_first = first if _given(info, "first") else None
    return PageRequest.of(keyset, first=given_first, after=after, last=last, before=before, default=default)


def _given(info: Info, argument: str) -> bool:
    """Whether the document (or its variables) gave `argument` a value, rather than the schema's default."""
    raw = info._raw_info
    return any(convert_arguments(raw, field.arguments).get(argument) is not None for field in raw.field_nodes)

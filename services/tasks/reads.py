"""Reads of many tasks at once, one grouped statement each: what a page of N tasks costs as much as 1.

Each function takes the task ids a request asked about and answers for all of them; the GraphQL
DataLoaders call them with every id a query's resolvers asked for in one tick.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tortoise.functions import Count

from models import TaskInstance
from services.chain import OPEN_STATUSES
from services.kit import (
    Keyset,
    Page,
    PageRequest,
    SortKey,
    connection,
    is_sqlite,
    parse_instant,
    parse_integer,
    parse_uuid,
)


async def open_instances(task_ids: Sequence[str]) -> dict[str, TaskInstance]:
    """Each task's unsettled instance: the PENDING one when there is one, else its latest waiting review."""
    best: dict[str, TaskInstance] = {}
    # "PENDING" sorts before "PENDING_REVIEW": the first row per task is the one to show
    rows = await TaskInstance.filter(task_id__in=list(task_ids), status__in=OPEN_STATUSES).order_by(
        "status", "-seq"
    )
    for row in rows:
        best.setdefault(str(row.task_id), row)
    return best


@dataclass(frozen=True)
class InstanceCount:
    """How many instances a task has that close at or after `closes_from` (None: all of them)."""

    task_id: str
    closes_from: datetime | None = None


async def instance_counts(keys: Sequence[InstanceCount]) -> dict[InstanceCount, int]:
    groups: dict[datetime | None, list[str]] = defaultdict(list)
    for key in keys:
        groups[key.closes_from].append(key.task_id)
    counts: dict[InstanceCount, int] = {}
    for closes_from, task_ids in groups.items():
        query = TaskInstance.filter(task_id__in=task_ids)
        if closes_from is not None:
            query = query.filter(closes_at__gte=closes_from)
        rows: list[tuple[Any, int]] = await (
            query.annotate(count=Count("id")).group_by("task_id").values_list("task_id", "count")
        )
        for task_id, count in rows:
            counts[InstanceCount(str(task_id), closes_from)] = int(count)
    return counts


# a user's tasks, newest first
TASK_ORDER = Keyset("task", (SortKey("created_at", parse_instant, True), SortKey("id", parse_uuid, True)))
# a task's instances, newest first (seq is unique per task)
INSTANCE_ORDER = Keyset("instance", (SortKey("seq", parse_integer, True),))
# an instance's proofs, oldest first
VERIFICATION_ORDER = Keyset(
    "verification", (SortKey("submitted_at", parse_instant), SortKey("id", parse_uuid))
)


@dataclass(frozen=True)
class InstancePage:
    """A page of one task's instances (INSTANCE_ORDER), of those closing at or after `closes_from` (a
    partner's view: services/partners/access.py)."""

    task_id: str
    request: PageRequest
    closes_from: datetime | None = None


def _placeholders(sqlite: bool, start: int, count: int) -> list[str]:
    return ["?"] * count if sqlite else [f"${n}" for n in range(start, start + count)]


async def instance_pages(pages: Sequence[InstancePage]) -> dict[InstancePage, Page[TaskInstance]]:
    """Pages asked with the same request and bound share one windowed statement (a page of tasks asks
    the same of every task, so that is one statement per request)."""
    groups: dict[tuple[PageRequest, datetime | None], list[InstancePage]] = defaultdict(list)
    for page in pages:
        groups[(page.request, page.closes_from)].append(page)
    found: dict[InstancePage, Page[TaskInstance]] = {}
    for (request, closes_from), members in groups.items():
        rows = await _windowed_rows([p.task_id for p in members], request, closes_from)
        for page in members:
            found[page] = Page.of(rows.get(page.task_id, []), request)
    return found


async def _windowed_rows(
    task_ids: list[str], request: PageRequest, closes_from: datetime | None
) -> dict[str, list[TaskInstance]]:
    """Each task's rows of the page, one more than its size, in the order the request reads them."""
    sqlite = is_sqlite()
    columns = ", ".join(f'"{c}"' for c in sorted(TaskInstance._meta.db_fields))
    values: list[Any] = [*task_ids]
    conditions = [f"task_id IN ({', '.join(_placeholders(sqlite, 1, len(task_ids)))})"]

    def bind(value: Any) -> str:
        values.append(value)
        return _placeholders(sqlite, len(values), 1)[0]

    # newest first: rows after a cursor have a smaller seq
    if request.after is not None:
        conditions.append(f"seq < {bind(request.after[0])}")
    if request.before is not None:
        conditions.append(f"seq > {bind(request.before[0])}")
    if closes_from is not None:
        conditions.append(f"closes_at >= {bind(closes_from)}")
    limit_at = bind(request.size + 1)
    direction = "ASC" if request.backward else "DESC"
    sql = (
        f"SELECT {columns} FROM (SELECT {columns}, ROW_NUMBER() OVER"
        f" (PARTITION BY task_id ORDER BY seq {direction}) AS page_row FROM task_instances"
        f" WHERE {' AND '.join(conditions)}) AS paged WHERE page_row <= {limit_at}"
        f" ORDER BY task_id, seq {direction}"
    )
    grouped: dict[str, list[TaskInstance]] = defaultdict(list)
    for row in await connection().execute_query_dict(sql, values):
        instance = TaskInstance._init_from_db(**row)
        grouped[str(instance.task_id)].append(instance)
    return grouped

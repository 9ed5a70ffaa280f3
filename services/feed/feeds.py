"""Reading the outbox in position order, narrowed to what the viewer may see (services/partners/access.py).

Only rows with a position (given after commit, in commit order) are ever read, so a reader never sees a
gap fill in.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from tortoise.queryset import QuerySet

from models import Event
from services.kit import BadInput, EventIds, Keyset, NotFound, SortKey, parse_id, parse_integer
from services.partners import Access, require_visible_task

# Positions are BIGINT: a larger "id" names no event and must not reach the database.
MAX_POSITION = 2**63 - 1
# Rows read per query when catching up: bounded, so a long backlog never lands in memory at once.
READ_BATCH = 500


@dataclass(frozen=True)
class FeedScope:
    """The users (and optionally the one task) whose events a viewer asked for, read as `access` allows."""

    access: Access
    user_ids: frozenset[str]
    task_id: str | None = None


async def feed_scope(access: Access, user_id: str | None, task_id: str | None) -> FeedScope:
    """Narrow the viewer's feed (their own and whom they partner for) to a user and/or task.

    NOT_FOUND for either one not visible (never leaks).
    """
    visible = access.user_ids
    if user_id is not None:
        wanted = parse_id(user_id, "user")
        if wanted not in visible:
            raise NotFound("no such user among those you partner for")
        visible = frozenset({wanted})
    if task_id is None:
        return FeedScope(access, user_ids=visible)
    task = await require_visible_task(access, task_id)
    if str(task.owner_id) not in visible:
        raise NotFound("no such task")
    return FeedScope(access, user_ids=frozenset({str(task.owner_id)}), task_id=str(task.id))


def parse_position(value: object, field: str, ids: EventIds) -> int:
    """The position an event id names; "0" is the start of the feed (resume from the first event).

    Bare positions are not taken: resuming from chosen numbers would tell where one's events stand.
    """
    position = 0 if str(value) == "0" else ids.decode(value)
    if position is None or position > MAX_POSITION:
        raise BadInput(field, "is not an event id this API issued")
    return position


# the history, oldest first: positions follow commit order and are unique
EVENT_ORDER = Keyset("event", (SortKey("position", parse_integer),))


def scope_query(scope: FeedScope) -> QuerySet[Event]:
    """Every event of the scope the viewer may read, with what a page shows of each."""
    return _with_related(_scoped(scope))


async def readable_events(access: Access, positions: Collection[int]) -> list[Event]:
    """The events at `positions` the viewer may read: the history rule of every feed, one statement."""
    query = Event.filter(access.history_filter(access.user_ids), position__in=list(positions))
    return await _with_related(query)


def _with_related(query: QuerySet[Event]) -> QuerySet[Event]:
    # one joined read per batch: fan-out then serves every subscriber from memory
    return query.select_related("user", "task", "instance", "verification")


def _scoped(scope: FeedScope) -> QuerySet[Event]:
    # partners read from the partnership's start, and nothing of a deleted task
    query = Event.filter(scope.access.history_filter(scope.user_ids), position__not_isnull=True)
    if scope.task_id is not None:
        query = query.filter(task_id=scope.task_id)
    return query


async def history_page(
    scope: FeedScope, *, after: int | None, before: int | None, size: int, from_newest: bool
) -> list[Event]:
    """One page of the scope's history between the bounds, oldest first.

    `from_newest` takes the `size` newest rows inside the bounds (paging back), else the oldest.
    """
    query = _scoped(scope)
    if after is not None:
        query = query.filter(position__gt=after)
    if before is not None:
        query = query.filter(position__lt=before)
    rows = await _with_related(query.order_by("-position" if from_newest else "position").limit(size))
    return sorted(rows, key=_position)


async def scope_events_after(scope: FeedScope, position: int, limit: int = READ_BATCH) -> list[Event]:
    """A subscription's replay: the scope's events after `position`, oldest first."""
    return await _with_related(_scoped(scope).filter(position__gt=position).order_by("position").limit(limit))


async def events_between(
    after: int, upto: int, user_ids: Collection[str] | None, limit: int = READ_BATCH
) -> list[Event]:
    """The events of `user_ids` (None: every user's) with `after < position <= upto`, oldest first: what
    one listener per process fans out. The (user_id, position) index serves the narrowed read."""
    query = Event.filter(position__gt=after, position__lte=upto)
    if user_ids is not None:
        query = query.filter(user_id__in=sorted(user_ids))
    return await _with_related(query.order_by("position").limit(limit))


async def latest_position() -> int:
    row = await Event.filter(position__not_isnull=True).order_by("-position").only("position").first()
    return row.position if row is not None and row.position is not None else 0


def _position(event: Event) -> int:
    return event.position or 0

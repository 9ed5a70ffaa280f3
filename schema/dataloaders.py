"""One DataLoader per aspect, each one grouped statement: a list of N rows costs the statements of 1.

A request (or each pushed event of a subscription) gets a fresh `Loaders`; each loader is built the
first time a resolver asks for it, so an event that needs two of them builds two.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, TypeVar

from strawberry.dataloader import DataLoader

from models import AuthToken, Event, Partnership, Task, TaskBreak, TaskInstance, User, Verification, Webhook
from services.accounts import live_sessions_among
from services.feed import (
    CalendarAsk,
    Completion,
    DatedInstance,
    Scope,
    Streaks,
    calendars,
    completions,
    readable_events,
    streaks,
    streaks_of,
)
from services.kit import Page
from services.partners import Access, access_of, counterpart_ids, readable_partnerships
from services.tasks import (
    VERIFICATION_ORDER,
    InstanceCount,
    InstancePage,
    breaks_ahead,
    instance_counts,
    instance_pages,
    open_instances,
)
from services.webhooks import owned_webhooks_among

V = TypeVar("V")
K = TypeVar("K")


class SharedLoader(DataLoader[K, V]):
    """A DataLoader whose loads several resolvers of one document await together, each on a shield of its
    own. graphql-core cancels the siblings of a field whose error reaches their parent; awaiting a plain
    DataLoader's future, a cancelled sibling cancels that future itself, and every other field awaiting
    the same key (anywhere in the document) then fails with CancelledError: an HTTP 500."""

    def load(self, key: K) -> Awaitable[V]:
        return asyncio.shield(super().load(key))


async def _by_id(model: Any, keys: Sequence[str]) -> list[Any]:
    rows = {str(row.id): row for row in await model.filter(id__in=list(keys))}
    return [rows.get(key) for key in keys]


async def _load_users(keys: list[str]) -> list[User | None]:
    return await _by_id(User, keys)


async def _load_tasks(keys: list[str]) -> list[Task | None]:
    return await _by_id(Task, keys)


async def _load_instances(keys: list[str]) -> list[TaskInstance | None]:
    return await _by_id(TaskInstance, keys)


async def _load_verifications(keys: list[str]) -> list[Verification | None]:
    return await _by_id(Verification, keys)


async def _load_verifications_of_instances(keys: list[str]) -> list[list[Verification]]:
    grouped: dict[str, list[Verification]] = defaultdict(list)
    for row in await Verification.filter(instance_id__in=keys).order_by(*VERIFICATION_ORDER.order()):
        grouped[str(row.instance_id)].append(row)
    return [grouped[key] for key in keys]


async def _load_open_instances(keys: list[str]) -> list[TaskInstance | None]:
    found = await open_instances(keys)
    return [found.get(key) for key in keys]


async def _load_instance_counts(keys: list[InstanceCount]) -> list[int]:
    counts = await instance_counts(keys)
    return [counts.get(key, 0) for key in keys]


async def _load_instance_pages(keys: list[InstancePage]) -> list[Page[TaskInstance]]:
    pages = await instance_pages(keys)
    return [pages[key] for key in keys]


async def _load_breaks(keys: list[str]) -> list[list[TaskBreak]]:
    found = await breaks_ahead(keys, datetime.now(UTC))  # which are over: the display's clock suffices
    return [found[key] for key in keys]


async def _load_streaks(keys: list[str]) -> list[int]:
    streaks = await streaks_of(keys)
    return [streaks.get(key, 0) for key in keys]


async def _readable_among(
    keys: Sequence[tuple[V, K]], read: Callable[[V, list[K]], Awaitable[Iterable[Any]]], key_of: str
) -> list[Any]:
    """Rows by key as one viewer may read them (each key pairs the viewer with the row's key); None for
    the rest. A request has one viewer, so this is one statement."""
    found: dict[tuple[int, str], Any] = {}
    viewers = {id(viewer): viewer for viewer, _ in keys}
    for marker, viewer in viewers.items():
        wanted = [key for v, key in keys if id(v) == marker]
        for row in await read(viewer, wanted):
            found[(marker, str(getattr(row, key_of)))] = row
    return [found.get((id(viewer), str(key))) for viewer, key in keys]


async def _load_readable_events(keys: list[tuple[Access, int]]) -> list[Event | None]:
    return await _readable_among(keys, readable_events, "position")


async def _load_readable_partnerships(keys: list[tuple[User, str]]) -> list[Partnership | None]:
    return await _readable_among(keys, readable_partnerships, "id")


async def _load_live_sessions(keys: list[tuple[User, str]]) -> list[AuthToken | None]:
    return await _readable_among(keys, live_sessions_among, "id")


async def _load_owned_webhooks(keys: list[tuple[User, str]]) -> list[Webhook | None]:
    return await _readable_among(keys, owned_webhooks_among, "id")


async def _load_counterparts(keys: list[tuple[User, str]]) -> list[bool]:
    shown: dict[int, set[str]] = {}
    for viewer, _ in keys:
        if id(viewer) not in shown:
            wanted = [key for v, key in keys if v is viewer]
            shown[id(viewer)] = await counterpart_ids(viewer, wanted)
    return [key in shown[id(viewer)] for viewer, key in keys]


def _per_viewer(key: tuple[Any, object]) -> tuple[str, str]:
    viewer, row_key = key
    return str(getattr(viewer, "viewer_id", None) or viewer.id), str(row_key)


async def _load_access(keys: list[str]) -> list[Access]:
    found = await access_of(keys)
    return [found[key] for key in keys]


async def _load_completions(keys: list[tuple[Scope, datetime]]) -> list[Completion]:
    found = await completions(keys)
    return [found[key] for key in keys]


async def _load_progress_streaks(keys: list[Scope]) -> list[Streaks]:
    found = await streaks(keys)
    return [found[key] for key in keys]


async def _load_calendars(keys: list[CalendarAsk]) -> list[list[DatedInstance] | BaseException]:
    found = await calendars(keys)
    return [found[key] for key in keys]


class Loaders:
    @cached_property
    def user(self) -> DataLoader[str, User | None]:
        return SharedLoader(load_fn=_load_users)

    @cached_property
    def task(self) -> DataLoader[str, Task | None]:
        return SharedLoader(load_fn=_load_tasks)

    @cached_property
    def instance(self) -> DataLoader[str, TaskInstance | None]:
        return SharedLoader(load_fn=_load_instances)

    @cached_property
    def verification(self) -> DataLoader[str, Verification | None]:
        return SharedLoader(load_fn=_load_verifications)

    @cached_property
    def verifications_of_instance(self) -> DataLoader[str, list[Verification]]:
        return SharedLoader(load_fn=_load_verifications_of_instances)

    @cached_property
    def open_instance(self) -> DataLoader[str, TaskInstance | None]:
        """A task's unsettled instance (Task.currentInstance), by task id."""
        return SharedLoader(load_fn=_load_open_instances)

    @cached_property
    def instance_count(self) -> DataLoader[InstanceCount, int]:
        return SharedLoader(load_fn=_load_instance_counts)

    @cached_property
    def instance_page(self) -> DataLoader[InstancePage, Page[TaskInstance]]:
        return SharedLoader(load_fn=_load_instance_pages)

    @cached_property
    def breaks(self) -> DataLoader[str, list[TaskBreak]]:
        """A task's breaks that are not over, earliest first, by task id."""
        return SharedLoader(load_fn=_load_breaks)

    @cached_property
    def streak(self) -> DataLoader[str, int]:
        return SharedLoader(load_fn=_load_streaks)

    @cached_property
    def readable_event(self) -> DataLoader[tuple[Access, int], Event | None]:
        """An event by position, if the viewer's feeds show it (services/feed/feeds.py)."""
        return SharedLoader(load_fn=_load_readable_events, cache_key_fn=_per_viewer)

    @cached_property
    def readable_partnership(self) -> DataLoader[tuple[User, str], Partnership | None]:
        return SharedLoader(load_fn=_load_readable_partnerships, cache_key_fn=_per_viewer)

    @cached_property
    def live_session(self) -> DataLoader[tuple[User, str], AuthToken | None]:
        return SharedLoader(load_fn=_load_live_sessions, cache_key_fn=_per_viewer)

    @cached_property
    def owned_webhook(self) -> DataLoader[tuple[User, str], Webhook | None]:
        return SharedLoader(load_fn=_load_owned_webhooks, cache_key_fn=_per_viewer)

    @cached_property
    def counterpart(self) -> DataLoader[tuple[User, str], bool]:
        """Whether a user is on the other side of one of the viewer's partnerships."""
        return SharedLoader(load_fn=_load_counterparts, cache_key_fn=_per_viewer)

    @cached_property
    def access(self) -> DataLoader[str, Access]:
        """What a viewer may read (services/partners/access.py), by viewer id."""
        return SharedLoader(load_fn=_load_access)

    @cached_property
    def completion(self) -> DataLoader[tuple[Scope, datetime], Completion]:
        """Completed and settled instances of a task or a user since an instant."""
        return SharedLoader(load_fn=_load_completions)

    @cached_property
    def progress_streaks(self) -> DataLoader[Scope, Streaks]:
        return SharedLoader(load_fn=_load_progress_streaks)

    @cached_property
    def calendar(self) -> DataLoader[CalendarAsk, list[DatedInstance]]:
        return SharedLoader(load_fn=_load_calendars)

"""The event feed: `events` (history pages) and `verificationEvents` (replay, then live, no gaps)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import strawberry

from models import Event as EventRow
from realtime.subscribers import EndReason, Handoff, Subscriber
from resolvers.permissions import IsAuthenticated
from schema.context import Context, Info
from schema.deprecations import list_replaced_by
from schema.types.event import VerificationEvent
from schema.types.pagination import Connection, page_request
from services.feed import feeds
from services.kit import (
    Conflict,
    NotFound,
    ProofloopError,
    RateLimited,
    Unauthenticated,
    check_page_size,
    keyset_page,
)

DEFAULT_PAGE = 50


def _optional_id(value: strawberry.ID | None) -> str | None:
    return None if value is None else str(value)


def _pushed(info: Info, row: EventRow) -> VerificationEvent:
    """Each pushed event reads fresh rows (beyond those the hub read with the event)."""
    info.context.refresh_loaders()
    return VerificationEvent(row=row)


def _ending_error(reason: EndReason | None, last_sent: str) -> ProofloopError:
    if reason is EndReason.PARTNERSHIP_ENDED:
        return NotFound("no such user among those you partner for")
    if reason is EndReason.TOKEN_REVOKED:
        return Unauthenticated("the token of this subscription was revoked")
    if reason is EndReason.SHUTDOWN:
        return Conflict(f"server shutting down; resume with after={last_sent}")
    return Conflict(f"subscriber too slow; resume with after={last_sent}")


class _VerificationEventFeed:
    """`verificationEvents` to the socket's sender (web/live_sender.py), once its replay is done."""

    def payload(self, context: Context, row: EventRow) -> VerificationEvent:
        context.refresh_loaders()  # as `_pushed`: each event reads fresh rows
        return VerificationEvent(row=row)

    def ending(self, context: Context, reason: EndReason | None, last_sent: int) -> Exception:
        return _ending_error(reason, context.event_ids.encode(last_sent))


VERIFICATION_EVENT_FEED = _VerificationEventFeed()


@strawberry.type
class EventQueries:
    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="history visible to you, oldest first; before/last page back from the newest",
        deprecation_reason=list_replaced_by("eventsConnection"),
    )
    async def events(
        self,
        info: Info,
        after: strawberry.ID | None = None,
        first: int | None = DEFAULT_PAGE,
        before: strawberry.ID | None = None,
        last: int | None = None,
        user_id: strawberry.ID | None = None,
        task_id: strawberry.ID | None = None,
    ) -> list[VerificationEvent]:
        after_position = (
            None if after is None else feeds.parse_position(after, "after", info.context.event_ids)
        )
        before_position = (
            None if before is None else feeds.parse_position(before, "before", info.context.event_ids)
        )
        size = check_page_size(DEFAULT_PAGE if first is None else first, "first")
        if last is not None:
            size = check_page_size(last, "last")
        scope = await feeds.feed_scope(
            await info.context.access(), _optional_id(user_id), _optional_id(task_id)
        )
        # paging back: `last`, or `before` alone; `after` (with or without `before`) pages forward
        from_newest = last is not None or (before is not None and after is None)
        rows = await feeds.history_page(
            scope, after=after_position, before=before_position, size=size, from_newest=from_newest
        )
        return [VerificationEvent(row=row) for row in rows]

    @strawberry.field(
        permission_classes=[IsAuthenticated],
        description="history visible to you as a connection, oldest first; last/before page back",
    )
    async def events_connection(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
        user_id: strawberry.ID | None = None,
        task_id: strawberry.ID | None = None,
    ) -> Connection[VerificationEvent]:
        order = feeds.EVENT_ORDER
        request = page_request(
            info, order, first=first, after=after, last=last, before=before, default=DEFAULT_PAGE
        )
        scope = await feeds.feed_scope(
            await info.context.access(), _optional_id(user_id), _optional_id(task_id)
        )
        query = feeds.scope_query(scope)
        page = await keyset_page(query, order, request)
        return Connection.of(page, order, lambda row: VerificationEvent(row=row), query.count)


@strawberry.type
class EventSubscriptions:
    @strawberry.subscription(
        permission_classes=[IsAuthenticated],
        description="events of yourself and of every user you actively partner for, optionally narrowed; "
        "with `after`, replays what was missed since that event id, then goes live",
    )
    async def verification_events(
        self,
        info: Info,
        user_id: strawberry.ID | None = None,
        task_id: strawberry.ID | None = None,
        after: strawberry.ID | None = None,
    ) -> AsyncGenerator[VerificationEvent, None]:
        session = await info.context.authenticate()
        limit = info.context.settings.max_subscriptions_per_user
        hub = info.context.hub
        if refusal := hub.subscription_refusal(str(session.user.id), limit):  # before any database work
            raise RateLimited(refusal)
        last_sent = None if after is None else feeds.parse_position(after, "after", info.context.event_ids)
        scope = await feeds.feed_scope(
            await info.context.access(), _optional_id(user_id), _optional_id(task_id)
        )
        narrowed_to = next(iter(scope.user_ids)) if user_id is not None or task_id is not None else None
        subscriber = Subscriber(
            str(session.user.id), session.token_id, user_id=narrowed_to, task_id=scope.task_id
        )
        # registered before reading the table, so whatever commits from now on is queued for us
        if not hub.add(subscriber, watches=scope.access.user_ids, max_per_viewer=limit):
            raise RateLimited(hub.subscription_refusal(subscriber.viewer_id, limit) or "subscription quota")
        handed_off = False
        try:
            if last_sent is None:
                # live only: what the hub fans out from now on is newer than what it has read
                last_sent = hub.last_position
            else:
                async for row in _replay(scope, subscriber, last_sent):
                    last_sent = row.position or last_sent
                    yield _pushed(info, row)
            if info.context.hands_off_live:
                # the socket's one sender carries it from here: no task or generator kept per subscription
                subscriber.last_sent, handed_off = last_sent, True
                yield Handoff(subscriber, VERIFICATION_EVENT_FEED)  # type: ignore[misc]
                return
            while (queued := await subscriber.next_event()) is not None:
                position = queued.position or 0
                if position <= last_sent or not subscriber.wants(queued):
                    continue  # already replayed, or the partnership ended after it was queued
                last_sent = position
                yield _pushed(info, queued)
            raise _ending_error(subscriber.ended, info.context.event_ids.encode(last_sent))
        finally:
            if not handed_off:  # a handed-off subscriber is removed by its sender when it ends
                hub.remove(subscriber)


async def _replay(
    scope: feeds.FeedScope, subscriber: Subscriber, after: int
) -> AsyncGenerator[EventRow, None]:
    """The scope's events after `after`, read in bounded batches until caught up with the table."""
    while subscriber.ended is None:
        rows = await feeds.scope_events_after(scope, after)
        for row in rows:
            if subscriber.ended is not None:
                return
            after = row.position or after
            if subscriber.wants(row):
                yield row
        if len(rows) < feeds.READ_BATCH:
            return

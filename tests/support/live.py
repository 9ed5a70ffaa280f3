"""The live feed: websocket URLs, a subscribed feed, partners, and waiting for a task's history (shared by the
feed, account and subscription tests)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Collection
from datetime import UTC, datetime, timedelta
from typing import Any

from gql import Client, GraphQLRequest
from gql.transport.websockets import WebsocketsTransport
from websockets.exceptions import ConnectionClosed

from harness.proofloop import ApiClient, ServerProcess

SUBSCRIBE = """subscription($userId: ID, $taskId: ID, $after: ID) {
  verificationEvents(userId: $userId, taskId: $taskId, after: $after) {
    id type taskTitle instanceStatus user { id } task { id title } instance { id status }
  }
}"""


EVENTS = "query($after: ID) { events(after: $after, first: 100) { id type } }"


CREATE_TASK = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"


EVERY = 1  # seconds between the test tasks' occurrences: each one yields a MISSED event


def ws_url(server: ServerProcess) -> str:
    return server.url.replace("http://", "ws://") + "/graphql"


class Feed:
    """A subscription drained into a queue by a background task, so waiting never cancels it."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.items: asyncio.Queue[dict[str, Any] | BaseException | None] = asyncio.Queue()

    async def drain(self, stream: AsyncIterator[dict[str, Any]]) -> None:
        try:
            async for result in stream:
                await self.items.put(result["verificationEvents"])
            await self.items.put(None)
        except Exception as exc:
            await self.items.put(exc)

    async def next(self, within: float = 10) -> dict[str, Any]:
        item = await asyncio.wait_for(self.items.get(), within)
        if not isinstance(item, dict):
            raise AssertionError(f"the subscription ended: {item!r}")
        return item

    async def take(self, count: int, within: float = 15) -> list[dict[str, Any]]:
        return [await self.next(within) for _ in range(count)]

    async def ending(self, within: float, skipping: Collection[str] = ()) -> BaseException | None:
        """The error the subscription ended with (None for a clean end); fails if an event other than
        those `skipping` names comes first."""
        while True:
            item = await asyncio.wait_for(self.items.get(), within)
            if not isinstance(item, dict):
                return item
            if item["id"] not in skipping:
                raise AssertionError(f"expected the subscription to end, got event {item['id']}")

    async def stays_quiet(self, seconds: float, skipping: Collection[str] = ()) -> None:
        """Nothing but the events `skipping` names arrives for `seconds`."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                while True:
                    item = await self.items.get()
                    if not isinstance(item, dict) or item["id"] not in skipping:
                        raise AssertionError(f"expected nothing, got {item!r}")


@contextlib.asynccontextmanager
async def live_feed(server: ServerProcess, token: str, **variables: str) -> AsyncIterator[Feed]:
    transport = WebsocketsTransport(
        url=ws_url(server),
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
        init_payload={"Authorization": f"Bearer {token}"},
    )
    client = Client(transport=transport, fetch_schema_from_transport=False)
    session = await client.connect_async()  # type: ignore[no-untyped-call]
    feed = Feed(session)
    drain = asyncio.create_task(
        feed.drain(session.subscribe(GraphQLRequest(SUBSCRIBE, variable_values=variables)))
    )
    try:
        yield feed
    finally:
        drain.cancel()
        with contextlib.suppress(BaseException):
            await drain
        with contextlib.suppress(Exception):  # the server may have closed it already
            await client.close_async()  # type: ignore[no-untyped-call]


async def make_partners(api: ApiClient, user_token: str, partner_token: str, partner_email: str) -> str:
    """An ACTIVE partnership: the user invites the partner by email, the partner verifies it and accepts."""
    if not (await api.execute("{ me { emailVerified } }", token=partner_token))["me"]["emailVerified"]:
        await api.verify_email(partner_email)
    invited = await api.execute(
        "mutation($e: String!) { invitePartner(email: $e) { id } }", {"e": partner_email}, token=user_token
    )
    partnership_id: str = invited["invitePartner"]["id"]
    await api.execute(
        "mutation($id: ID!) { respondToInvite(partnershipId: $id, accept: true) { status } }",
        {"id": partnership_id},
        token=partner_token,
    )
    return partnership_id


async def start_missing_task(api: ApiClient, token: str, title: str = "Gym") -> str:
    """A task that the worker settles MISSED every EVERY seconds, from about two seconds from now."""
    starts_at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
    schedule = {
        "startsAt": starts_at.isoformat(),
        "rrule": f"FREQ=SECONDLY;INTERVAL={EVERY}",
        "timezone": "UTC",
        "windowSeconds": 1,
        "graceSeconds": 0,
    }
    data = await api.execute(
        CREATE_TASK, {"input": {"title": title, "method": "PHOTO", "schedule": schedule}}, token=token
    )
    task_id: str = data["createTask"]["id"]
    return task_id


async def history(api: ApiClient, token: str, after: str = "0") -> list[str]:
    return [e["id"] for e in (await api.execute(EVENTS, {"after": after}, token=token))["events"]]


async def wait_for_history(
    api: ApiClient, token: str, count: int, after: str = "0", within: float = 15
) -> list[str]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        ids = await history(api, token, after)
        if len(ids) >= count:
            return ids
        await asyncio.sleep(0.3)
    raise AssertionError(f"fewer than {count} events within {within} s")


def close_code(error: BaseException) -> int | None:
    """The websocket close code behind gql's "connection failed"."""
    closed = error.__cause__
    if isinstance(closed, ConnectionClosed) and closed.rcvd is not None:
        return closed.rcvd.code
    return None

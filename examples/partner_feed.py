"""Print your accountability partners' live feed, one line per event, until Ctrl-C.

    python examples/partner_feed.py --url http://127.0.0.1:8000 --email bob@example.com --password '…'

Credentials may come from PARTNER_FEED_EMAIL / PARTNER_FEED_PASSWORD (and the URL from PARTNER_FEED_URL)
instead. It logs in over HTTP, then subscribes over a websocket (graphql-transport-ws), sending the token
as the connection_init payload, exactly as a frontend would.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from typing import Any

from gql import Client, GraphQLRequest
from gql.transport.aiohttp import AIOHTTPTransport
from gql.transport.websockets import WebsocketsTransport

LOGIN = """mutation($e: String!, $p: String!) {
  sessionCreate(input: {email: $e, password: $p}) { token user { displayName } userErrors { message } }
}"""
FEED = """subscription($user: ID) {
  verificationEvents(userId: $user) { id type occurredAt taskTitle instanceStatus dueAt user { displayName } }
}"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", default=os.environ.get("PARTNER_FEED_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--email", default=os.environ.get("PARTNER_FEED_EMAIL"))
    parser.add_argument("--password", default=os.environ.get("PARTNER_FEED_PASSWORD"))
    parser.add_argument("--user-id", help="only this partner's events (default: everyone you watch, and you)")
    args = parser.parse_args(argv)
    if not args.email or not args.password:
        parser.error("--email and --password (or PARTNER_FEED_EMAIL and PARTNER_FEED_PASSWORD) are required")
    return args


async def login(url: str, email: str, password: str) -> tuple[str, str]:
    transport = AIOHTTPTransport(url=f"{url}/graphql")
    async with Client(transport=transport) as session:
        result = await session.execute(GraphQLRequest(LOGIN, variable_values={"e": email, "p": password}))
    signed_in = result["sessionCreate"]
    if signed_in["userErrors"]:
        raise SystemExit(f"sign-in refused: {signed_in['userErrors'][0]['message']}")
    return signed_in["token"], signed_in["user"]["displayName"]


def feed_line(event: dict[str, Any]) -> str:
    return (
        f"{event['occurredAt']}  {event['type']:<16} {event['user']['displayName']}: {event['taskTitle']}"
        f"  (now {event['instanceStatus']}, due {event['dueAt']}, event {event['id']})"
    )


async def follow(url: str, token: str, user_id: str | None) -> None:
    transport = WebsocketsTransport(
        url=url.replace("http", "ws", 1) + "/graphql",
        init_payload={"Authorization": f"Bearer {token}"},
        subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],  # graphql-transport-ws
    )
    async with Client(transport=transport) as session:
        request = GraphQLRequest(FEED, variable_values={"user": user_id})
        async for result in session.subscribe(request):
            print(feed_line(result["verificationEvents"]), flush=True)


async def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    url = args.url.rstrip("/")
    token, name = await login(url, args.email, args.password)
    print(
        f"signed in as {name}; following the live feed at {url} (Ctrl-C stops)", file=sys.stderr, flush=True
    )
    await follow(url, token, args.user_id)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())

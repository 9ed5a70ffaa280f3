"""Counted SQL statements per response, and a history of events and review requests to read."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from gql import Client, GraphQLRequest
from gql.transport.aiohttp import AIOHTTPTransport

from harness.media_factory import photo
from harness.proofloop import (
    ApiClient,
    create_open_task,
    file_var,
    row_key,
    upload,
)

REQUEST_REVIEW = """mutation($id: ID!, $photo: Upload) {
  requestReview(instanceId: $id, photo: $photo) { id status }
}"""


HISTORY = ["VERIFIED", "MISSED", "VERIFIED", "CANCELED", "VERIFIED", "REJECTED", "VERIFIED", "VERIFIED"]


async def counted(url: str, document: str, token: str, **variables: Any) -> tuple[dict[str, Any], int]:
    """The document's data and the number of SQL statements the server ran for it."""
    transport = AIOHTTPTransport(url=f"{url}/graphql", headers={"Authorization": f"Bearer {token}"})
    async with Client(transport=transport, fetch_schema_from_transport=False) as session:
        data = await session.execute(GraphQLRequest(document, variable_values=variables or None))
    assert transport.response_headers is not None
    return data, int(transport.response_headers["x-proofloop-statements"])


async def add_history(database_url: str, task_id: str) -> None:
    """Settled instances before the task's open one, as the chain would have left them."""
    conn = await asyncpg.connect(database_url)
    try:
        base = datetime.now(UTC) - timedelta(days=30)
        for n, status in enumerate(HISTORY):
            due = base + timedelta(days=n)
            await conn.execute(
                "INSERT INTO task_instances (id, task_id, seq, chain_version, opens_at, due_at, closes_at,"
                " status, settled_at, created_at, link_no, proofs_counted)"
                " VALUES ($1, $2, $3, 1, $4, $4, $4, $5, $4, now(), 0, 0)",
                uuid.uuid4(),
                uuid.UUID(row_key(task_id)),
                -len(HISTORY) + n,  # before the open instance's seq, oldest first
                due,
                status,
            )
    finally:
        await conn.close()


async def review_requests(api: ApiClient, owner_token: str, count: int, seed: int) -> None:
    for n in range(count):
        _, instance_id = await create_open_task(api, owner_token, "PARTNER")
        variables = {"id": instance_id, "photo": file_var(photo(seed + n))}
        requested = await upload(api, REQUEST_REVIEW, variables, token=owner_token)
        assert requested["requestReview"]["status"] == "PENDING_REVIEW"

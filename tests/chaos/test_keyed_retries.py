"""A retrying client on a loaded machine: a process spinning on every core, PostgreSQL healthy, documents
of several taskCreate fields sent with an Idempotency-Key by a client that gives up after a short wait and
sends the very request again, as a phone on a bad network does. The API never answers SERVICE_UNAVAILABLE while the
database is healthy, and the rows are exactly those asked for: each document ran once, whatever the
number of copies. (The long form, with figures, is `python -m bench.keyed_retries`.)"""

from __future__ import annotations

import uuid

import pytest

from harness.chaos import ChaosRun, Shape
from harness.cpu_load import spinning
from harness.keyed_retries import DOCUMENT_TASKS, send_documents
from harness.private_services import PrivatePostgres, PrivateRedis
from harness.proofloop import ApiClient

IDLE = Shape(tasks=0, every=2, start_in=2, before=0, after=0, pause=0)
DOCUMENTS = 8


@pytest.mark.timeout(150)
async def test_keyed_retries_under_load_make_each_document_once_and_no_outage_is_declared(
    private_pg: PrivatePostgres, private_redis: PrivateRedis, database_name: str
) -> None:
    run = ChaosRun(private_pg, private_redis, database_name, IDLE)
    run.env["PROOFLOOP_MAX_TASKS_PER_USER"] = str(DOCUMENTS * DOCUMENT_TASKS)
    async with run.running():
        async with ApiClient(run.api_url) as api:
            token, _ = await api.register()
        with spinning(per_core=1):
            sent = await send_documents(run.api_url, token, DOCUMENTS, client_timeout=1.0)
        async with run.connection() as db:
            rows = {str(r["id"]) for r in await db.fetch("SELECT id FROM tasks")}
    assert sent.unavailable == 0, sent.describe()
    answered = {task_id for ids in sent.created.values() for task_id in ids}
    assert len(sent.created) == DOCUMENTS, sent.describe()
    assert len(answered) == DOCUMENTS * DOCUMENT_TASKS, sent.describe()
    # exactly the rows asked for: every answered task is a row, and no copy made another
    assert {uuid.UUID(r).hex for r in rows} == {uuid.UUID(a).hex for a in map(sent.row_key, answered)}

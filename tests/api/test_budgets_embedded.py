"""The hostile inputs and the cost budget on the embedded default database (SQLite), through the real API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.api.test_input_validation import CREATE, REGISTER, expect_bad_input, post_raw, task_input
from tests.api.test_query_cost import ATTACK, refused
from tests.harness import ApiClient, ServerProcess, free_port, run_cli


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[ServerProcess]:
    data_dir: Path = tmp_path_factory.mktemp("embedded")
    env = {"PROOFLOOP_DATA_DIR": str(data_dir), "PROOFLOOP_REDIS_URL": redis_url, "PROOFLOOP_SECRET_KEY": "k"}
    run_cli(["migrate"], env)  # no PROOFLOOP_DATABASE_URL: the SQLite file under the data dir
    with ServerProcess(env, port=free_port()) as proc:
        yield proc


@pytest.fixture
async def sqlite_api(embedded: ServerProcess) -> AsyncIterator[ApiClient]:
    async with ApiClient(embedded.url) as client:
        yield client


async def test_hostile_input_on_sqlite(sqlite_api: ApiClient) -> None:
    variables = {"e": "z@example.com", "n": "Zed", "tz": "Europe"}
    assert await expect_bad_input(sqlite_api, REGISTER, variables, None) == "timezone"
    token, _ = await sqlite_api.register()
    for bad in ("nul\x00", "lone \ud800"):
        assert (
            await expect_bad_input(sqlite_api, CREATE, {"input": task_input(title=bad)}, token)
            == "input.title"
        )
    nested = "[" * 1000 + "1" + "]" * 1000
    body = '{"query": "query($i: ID!) { task(id: $i) { id } }", "variables": {"i": ' + nested + "}}"
    status, answer = await post_raw(sqlite_api.url, body.encode(), token)
    assert (status, answer["errors"][0]["extensions"]["field"]) == (400, "variables")
    assert "exceeds the budget" in await refused(sqlite_api, token, ATTACK)

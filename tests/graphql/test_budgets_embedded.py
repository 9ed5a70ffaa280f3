"""Issue 9's hostile inputs on the embedded default (a SQLite file and an embedded Redis), through the real
API: each gets its contract code, /healthz keeps answering, another user's writes are not held behind the
attack, the API's memory stays under budget, and nothing half-stored is left."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from websockets.asyncio.client import ClientConnection

from harness.proofloop import (
    ApiClient,
    GraphQLFailure,
    ServerProcess,
    create_open_task,
    free_port,
    migrated_sqlite,
)
from tests.support.input_validation import CREATE, REGISTER, expect_bad_input, post_raw, task_input
from tests.support.media_budgets import RSS_BUDGET_MB, api_rss_mb
from tests.support.query_cost import ATTACK, refused
from tests.support.quotas import CHECK_IN, QUOTAS, acked, open_socket
from tests.support.schedule_budgets import MONTHLY_EVERY_MINUTE, refusal
from tests.support.schedule_budgets import task_input as schedule_input

# never occurs, but proving it walks every Monday up to the year 9998: about 13.6 million steps
COSTLY_RULE = "FREQ=HOURLY;INTERVAL=168;BYDAY=MO"
SUBSCRIBE = "subscription { verificationEvents { id type verification { status } } }"


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The embedded default, with small quotas and a recurrence budget long enough to watch."""
    data_dir: Path = tmp_path_factory.mktemp("embedded")
    env = {
        "PROOFLOOP_DATA_DIR": str(data_dir),  # no database or Redis URL: SQLite and redis-server under it
        "PROOFLOOP_SECRET_KEY": "k",
        "PROOFLOOP_MIN_INTERVAL_SECONDS": "1",
        # seconds of work, three quarters of COSTLY_RULE's whole search (about 12M steps): the steps run
        # out before the search ends on any machine, and the expansion lasts long enough to write beside it
        "PROOFLOOP_RECURRENCE_MAX_STEPS": "9000000",
        "PROOFLOOP_RECURRENCE_MAX_SECONDS": "600",  # the backstop: the steps decide, on any machine
        **QUOTAS,
    }
    migrated_sqlite(data_dir)  # no PROOFLOOP_DATABASE_URL: the SQLite file under the data dir
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


@pytest.mark.parametrize(
    ("rrule", "starts_at", "fragment"),
    [
        (
            "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=23;BYMINUTE=59;BYSECOND=59",
            "2028-02-29T23:59:59+00:00",
            "sparser than the recurrence budget",
        ),
        (MONTHLY_EVERY_MINUTE, "2020-01-01T00:00:00+00:00", "denser than the recurrence budget"),
    ],
)
async def test_hostile_rules_on_sqlite(
    sqlite_api: ApiClient, rrule: str, starts_at: str, fragment: str
) -> None:
    token, _ = await sqlite_api.register()
    failure = await refusal(sqlite_api, token, rrule, starts_at)
    assert (failure.code, failure.field) == ("BAD_USER_INPUT", "input.schedule.rrule")
    assert fragment in failure.message
    assert (await sqlite_api.execute("{ tasks { totalCount } }", token=token))["tasks"]["totalCount"] == 0


async def test_a_costly_rule_holds_neither_the_loop_nor_another_users_write(sqlite_api: ApiClient) -> None:
    """The issue measured other users' writes waiting 9 s on SQLite's write lock behind one hostile rule:
    expansion now runs in a thread before any transaction, so a write by someone else gets through."""
    attacker, _ = await sqlite_api.register()
    bystander, _ = await sqlite_api.register()
    attack = asyncio.create_task(refusal(sqlite_api, attacker, COSTLY_RULE, "2026-01-01T00:00:00+00:00"))
    answered = 0
    async with httpx.AsyncClient(base_url=sqlite_api.url, timeout=30) as client:
        while answered < 3 and not attack.done():  # the expansion is under way
            answered += (await client.get("/healthz")).status_code == 200
            await asyncio.sleep(0.05)
        _, instance_id = await create_open_task(sqlite_api, bystander, "GPS")
        rejected = await sqlite_api.execute(CHECK_IN, {"i": instance_id}, token=bystander)
        written_during_attack = not attack.done()
        while not attack.done():
            answered += (await client.get("/healthz")).status_code == 200
            await asyncio.sleep(0.05)
    failure = await attack
    assert (failure.code, failure.field) == ("BAD_USER_INPUT", "input.schedule.rrule")
    # the steps run out before the search ends, on any machine and under any load: too costly, always
    assert "too costly" in failure.message
    assert rejected["checkIn"]["status"] == "REJECTED"
    assert written_during_attack, "another user's task and check-in waited for the hostile rule"
    assert answered >= 3  # the expansion ran in a worker thread: the loop kept serving
    assert (await sqlite_api.execute("{ tasks { totalCount } }", token=attacker))["tasks"]["totalCount"] == 0


async def test_upcoming_is_capped_per_request_on_sqlite(sqlite_api: ApiClient) -> None:
    token, _ = await sqlite_api.register()
    created = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"
    schedule = schedule_input("FREQ=DAILY", "2030-01-01T07:00:00+00:00")
    await sqlite_api.execute(created, {"input": schedule}, token=token)
    aliases = " ".join(f"u{n}: upcoming(first: 100)" for n in range(6))  # 600 > the default 500
    with pytest.raises(GraphQLFailure) as failure:
        await sqlite_api.execute(f"{{ tasks(first: 1) {{ edges {{ node {{ {aliases} }} }} }} }}", token=token)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "first")


async def test_concurrent_creates_cannot_pass_the_task_quota_on_sqlite(sqlite_api: ApiClient) -> None:
    token, _ = await sqlite_api.register()
    created = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"
    schedule = schedule_input("FREQ=DAILY", "2030-01-01T07:00:00+00:00")

    async def create() -> str:
        try:
            await sqlite_api.execute(created, {"input": schedule}, token=token)
        except GraphQLFailure as failure:
            return failure.code
        return "OK"

    codes = await asyncio.gather(*(create() for _ in range(8)))
    assert sorted(codes) == ["CONFLICT"] * 5 + ["OK"] * 3
    assert (await sqlite_api.execute("{ tasks { totalCount } }", token=token))["tasks"]["totalCount"] == 3


async def test_sets_of_creates_cannot_pass_the_task_quota_on_sqlite(sqlite_api: ApiClient) -> None:
    """Documents of several createTask fields, done as one set each, counted in order against the quota."""
    token, _ = await sqlite_api.register()
    schedule = schedule_input("FREQ=DAILY", "2030-01-01T07:00:00+00:00")
    fields = " ".join(f"t{n}: createTask(input: $input) {{ id currentInstance {{ id }} }}" for n in range(2))
    document = f"mutation($input: CreateTaskInput!) {{ {fields} }}"

    async def create_set() -> list[str | None]:
        try:
            data = await sqlite_api.execute(document, {"input": schedule}, token=token)
        except GraphQLFailure as failure:
            assert failure.code == "CONFLICT"
            return [str(failure.errors[0]["path"][0])]
        assert all(data[f"t{n}"]["currentInstance"]["id"] for n in range(2))
        return [None]

    outcomes = await asyncio.gather(*(create_set() for _ in range(3)))
    # 3 sets of 2 against a quota of 3: one set whole, one cut after its first field, one refused at once
    assert sorted(o[0] or "" for o in outcomes) == ["", "t0", "t1"]
    assert (await sqlite_api.execute("{ tasks { totalCount } }", token=token))["tasks"]["totalCount"] == 3


async def test_a_subscription_flood_on_the_embedded_default(
    embedded: ServerProcess, sqlite_api: ApiClient
) -> None:
    """Issue 9's fan-out attack scaled to the small quotas: 3 sockets x 20 subscriptions sent at once, then
    rejected check-ins. The third socket is closed, 3 subscriptions are accepted and the rest refused
    before they are validated, each check-in reaches the 3, and memory stays under the budget."""
    token, _ = await sqlite_api.register()
    _, instance_id = await create_open_task(sqlite_api, token, "GPS")
    sockets = [await open_socket(embedded, token) for _ in range(3)]
    accepted = []
    for socket in sockets:
        with contextlib.suppress(websockets.ConnectionClosed, AssertionError):
            await acked(socket)
            accepted.append(socket)
    assert len(accepted) == 2
    assert [socket.close_code for socket in sockets if socket not in accepted] == [4429]
    frames: dict[str, list[Any]] = {}

    async def read(socket: ClientConnection) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for raw in socket:
                message = json.loads(raw)
                frames.setdefault(str(message.get("type")), []).append(message)

    for index, socket in enumerate(accepted):
        for n in range(20):
            payload = {"query": SUBSCRIBE}
            await socket.send(json.dumps({"id": f"{index}-{n}", "type": "subscribe", "payload": payload}))
    readers = [asyncio.create_task(read(socket)) for socket in accepted]
    peak = api_rss_mb(embedded)
    async with httpx.AsyncClient(base_url=embedded.url, timeout=30) as client:
        while len(frames.get("error", ())) < 37:  # 40 frames, 3 accepted
            assert (await client.get("/healthz")).status_code == 200
            await asyncio.sleep(0.05)
        for _ in range(2):  # the attempt quota is 2: rejected, both stored
            rejected = await sqlite_api.execute(CHECK_IN, {"i": instance_id}, token=token)
            assert rejected["checkIn"]["status"] == "REJECTED"
        with pytest.raises(GraphQLFailure) as third:  # and a third is refused before it is judged
            await sqlite_api.execute(CHECK_IN, {"i": instance_id}, token=token)
        assert third.value.code == "CONFLICT"
        while len(frames.get("next", ())) < 6:
            assert (await client.get("/healthz")).status_code == 200
            peak = max(peak, api_rss_mb(embedded))
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # room for any push beyond the six
    assert {e["payload"][0]["extensions"]["code"] for e in frames["error"]} == {"RATE_LIMITED"}
    assert len(frames["next"]) == 6  # 2 events x 3 subscriptions, and no more
    assert peak < RSS_BUDGET_MB, f"API RSS peaked at {peak:.0f} MB"
    for reader in readers:
        reader.cancel()
    for socket in accepted:
        await socket.close()


async def test_invites_and_login_guesses_are_limited_on_the_embedded_default(sqlite_api: ApiClient) -> None:
    token, user = await sqlite_api.register()
    invite = "mutation($e: String!) { invitePartner(email: $e) { id } }"
    codes = []
    for n in range(5):
        try:
            await sqlite_api.execute(invite, {"e": f"friend-{n}-{user['id'][:8]}@example.com"}, token=token)
            codes.append("OK")
        except GraphQLFailure as failure:
            codes.append(failure.code)
    assert codes == ["OK"] * 3 + ["RATE_LIMITED"] * 2
    login = "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { token } }"

    async def guess(n: int) -> str:
        try:
            await sqlite_api.execute(login, {"e": user["email"], "p": f"guess {n}"})
        except GraphQLFailure as failure:
            return failure.code
        return "OK"

    guesses = await asyncio.gather(
        *(guess(n) for n in range(14))
    )  # 10 attempts, counted in the embedded Redis
    assert guesses.count("UNAUTHENTICATED") <= 10
    assert guesses.count("RATE_LIMITED") >= 4

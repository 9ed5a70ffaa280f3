"""Hostile schedules through the real API: each gets BAD_USER_INPUT with its field and stores nothing,
recurrence work holds neither the event loop nor another user's write (SQLite's one writer included), and
`upcoming` is capped per request. Also the API's due times against the brute-force RFC 5545 expander."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from harness.proofloop import ApiClient, GraphQLFailure, create_open_task, local_http
from tests.support.backends import Backend, Deployment, both_backends, deployed
from tests.support.quotas import CHECK_IN
from tests.support.rfc5545_oracle import Parts, expand
from tests.support.schedule_budgets import CREATE, MONTHLY_EVERY_MINUTE, refusal, task_input

# never occurs, but proving it walks every Monday up to the year 9998: about 13.6 million steps
COSTLY_RULE = "FREQ=HOURLY;INTERVAL=168;BYDAY=MO"
TASK_COUNT = "{ tasks { totalCount } }"


@pytest.fixture
def api(api_deployment: Deployment) -> ApiClient:
    return api_deployment.client()


@both_backends
@pytest.mark.parametrize(
    ("rrule", "starts_at", "field", "fragment"),
    [
        (
            "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=23;BYMINUTE=59;BYSECOND=59",
            "2028-02-29T23:59:59+00:00",
            "input.schedule.rrule",
            "sparser than the recurrence budget",
        ),
        (
            "FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=23;BYMINUTE=59;BYSECOND=59",
            "2026-01-01T00:00:00+00:00",
            "input.schedule.startsAt",
            "2028-02-29T23:59:59+00:00",
        ),
        (
            MONTHLY_EVERY_MINUTE,
            "2020-01-01T00:00:00+00:00",
            "input.schedule.rrule",
            "denser than the recurrence budget",
        ),
        (COSTLY_RULE, "2026-01-01T00:00:00+00:00", "input.schedule.rrule", "too costly"),
        ("FREQ=YEARLY;BYMONTH=12;BYDAY=8MO", "2026-12-07T00:00:00+00:00", "input.schedule.rrule", "BYDAY"),
        ("FREQ=DAILY;COUNT=\uff13", "2026-12-07T00:00:00+00:00", "input.schedule.rrule", "ASCII"),
        ("FREQ=DAILY;;;", "2026-12-07T00:00:00+00:00", "input.schedule.rrule", "cannot parse"),
    ],
)
async def test_hostile_rules_are_bad_user_input(
    api: ApiClient, rrule: str, starts_at: str, field: str, fragment: str
) -> None:
    token, _ = await api.register()
    failure = await refusal(api, token, rrule, starts_at)
    assert (failure.code, failure.field) == ("BAD_USER_INPUT", field)
    assert fragment in failure.message
    assert (await api.execute(TASK_COUNT, token=token))["tasks"]["totalCount"] == 0


@both_backends
async def test_upcoming_is_capped_per_request(api: ApiClient) -> None:
    token, _ = await api.register()
    await api.execute(CREATE, {"input": task_input("FREQ=DAILY", "2030-01-01T07:00:00+00:00")}, token=token)
    aliases = " ".join(f"u{n}: upcoming(first: 100)" for n in range(6))  # 600 > the default 500
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(f"{{ tasks(first: 1) {{ edges {{ node {{ {aliases} }} }} }} }}", token=token)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "first")
    five = " ".join(f"u{n}: upcoming(first: 100)" for n in range(5))
    page = await api.execute(f"{{ tasks(first: 1) {{ edges {{ node {{ {five} }} }} }} }}", token=token)
    assert len(page["tasks"]["edges"][0]["node"]["u4"]) == 100


@pytest.fixture(scope="module")
def slow_budget(request: pytest.FixtureRequest, backend: Backend) -> Iterator[Deployment]:
    """An API whose recurrence budget lets one hostile rule run for seconds: long enough to watch."""
    settings = {
        # seconds of work, three quarters of the hostile rule's whole search (about 12M steps): the steps
        # run out before the search ends on any machine
        "PROOFLOOP_RECURRENCE_MAX_STEPS": "9000000",
        "PROOFLOOP_RECURRENCE_MAX_SECONDS": "600",  # the backstop: the steps decide, on any machine
    }
    with deployed(request, backend, settings, api_only=True) as running:
        yield running


@both_backends
async def test_a_costly_rule_holds_neither_the_loop_nor_another_users_write(slow_budget: Deployment) -> None:
    async with slow_budget.client() as api:
        attacker, _ = await api.register()
        bystander, _ = await api.register()
        attack = asyncio.create_task(refusal(api, attacker, COSTLY_RULE, "2026-01-01T00:00:00+00:00"))
        answered = 0
        async with local_http(base_url=api.url, timeout=30) as client:
            while answered < 3 and not attack.done():  # the expansion is under way
                answered += (await client.get("/healthz")).status_code == 200
                await asyncio.sleep(0.05)
            _, instance_id = await create_open_task(api, bystander, "GPS")
            rejected = await api.execute(CHECK_IN, {"i": instance_id}, token=bystander)
            written_during_attack = not attack.done()
            while not attack.done():
                answered += (await client.get("/healthz")).status_code == 200
                await asyncio.sleep(0.05)
        failure = await attack
        assert (await api.execute(TASK_COUNT, token=attacker))["tasks"]["totalCount"] == 0
    assert (failure.code, failure.field) == ("BAD_USER_INPUT", "input.schedule.rrule")
    assert "too costly" in failure.message
    assert rejected["checkIn"]["status"] == "REJECTED"
    assert written_during_attack, "another user's task and check-in waited for the hostile rule"
    # the search ran for seconds in a worker thread: the loop kept serving health checks meanwhile
    assert answered >= 3


@pytest.mark.parametrize(
    ("parts", "starts_at", "zone"),
    [
        (Parts("DAILY", byhour=[2], byminute=[30]), "2027-03-26T02:30:00+01:00", "Europe/Berlin"),
        (Parts("WEEKLY", interval=2, byday=["SU", "TU"]), "2027-10-31T01:30:00-04:00", "America/New_York"),
        (
            Parts("MONTHLY", byday=["MO", "1FR"], byhour=[2]),
            "2027-04-02T02:00:00+11:00",
            "Australia/Lord_Howe",
        ),
        (Parts("HOURLY", interval=5, byminute=[0, 45]), "2027-09-26T00:00:00+13:45", "Pacific/Chatham"),
        (Parts("MINUTELY", interval=97, byhour=[1, 2, 3]), "2027-11-07T01:00:00-02:30", "America/St_Johns"),
        (
            Parts("YEARLY", bymonth=[3, 10], byday=["-1SU"], byhour=[2]),
            "2027-10-31T02:00:00+02:00",
            "Europe/Berlin",
        ),
    ],
)
async def test_api_due_times_match_the_rfc_brute_force(
    api: ApiClient, parts: Parts, starts_at: str, zone: str
) -> None:
    token, _ = await api.register()
    task = (await api.execute(CREATE, {"input": task_input(parts.text(), starts_at, zone)}, token=token))[
        "createTask"
    ]
    start = datetime.fromisoformat(starts_at)
    expected = [at for at in expand(parts, start, zone, 20000, enough=60) if at > datetime.now(UTC)][:10]
    got = [datetime.fromisoformat(at) for at in task["upcoming"]]
    assert got == expected
    assert datetime.fromisoformat(task["currentInstance"]["dueAt"]) == expected[0]
    assert all(at.endswith("Z") for at in task["upcoming"])  # UTC; the zone is the task's timezone
    assert expected[0] - start < timedelta(days=400)

"""Hostile reminder and webhook inputs through the real API, refused before anything is stored, on the
run's own server: without the tests' webhook allowance, as in production."""

from __future__ import annotations

import pytest

from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess
from tests.support.reminders import REGISTER_WEBHOOK, UPDATE, create_task, every

AT_OPEN = {"before": "OPENS", "offsetSeconds": 0}


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://example.com/hook", "https"),
        ("https://127.0.0.1/hook", "private"),
        ("https://localhost:8443/hook", "private"),
        ("https://[::1]/hook", "private"),
        ("https://10.1.2.3/hook", "private"),
        ("https://192.168.0.10/hook", "private"),
        ("https://169.254.169.254/latest/meta-data", "private"),
        ("https://[::ffff:10.0.0.1]/hook", "private"),
        ("https://0.0.0.0/hook", "private"),
        ("https://user:pw@example.com/hook", "credentials"),
        ("ftp://example.com/hook", "https"),
    ],
)
async def test_webhooks_refuse_insecure_and_private_addresses(
    server: ServerProcess, url: str, why: str
) -> None:
    async with ApiClient(server.url) as api:
        token, _ = await api.register()
        with pytest.raises(GraphQLFailure) as refused:
            await api.execute(REGISTER_WEBHOOK, {"url": url}, token=token)
    assert refused.value.code == "BAD_USER_INPUT"
    assert refused.value.field == "input.url"
    assert why in refused.value.message


@pytest.mark.parametrize(
    ("reminders", "field"),
    [
        ([{"before": "DUE", "offsetSeconds": n} for n in range(6)], "input.reminders"),
        ([AT_OPEN, AT_OPEN], "input.reminders"),
        ([{"before": "DUE", "offsetSeconds": -1}], "input.reminders.0.offsetSeconds"),
        ([AT_OPEN, {"before": "DUE", "offsetSeconds": 10**9}], "input.reminders.1.offsetSeconds"),
        # every 60 s, window 30: "at open" may count back at most 30 s, "before due" at most 60
        ([{"before": "OPENS", "offsetSeconds": 31}], "input.reminders.0.offsetSeconds"),
        ([{"before": "DUE", "offsetSeconds": 61}], "input.reminders.0.offsetSeconds"),
    ],
)
async def test_reminders_outside_the_occurrence_spacing_are_refused(
    api: ApiClient, reminders: list[dict[str, object]], field: str
) -> None:
    token, _ = await api.register()
    with pytest.raises(GraphQLFailure) as refused:
        await create_task(api, token, every(60, window=30, starts_in=600), reminders)
    assert refused.value.code == "BAD_USER_INPUT"
    assert refused.value.field == field


async def test_an_update_checks_reminders_against_the_schedule_it_leaves(api: ApiClient) -> None:
    token, _ = await api.register()
    task = await create_task(
        api, token, every(600, window=30, starts_in=600), [{"before": "DUE", "offsetSeconds": 300}]
    )
    with pytest.raises(GraphQLFailure) as refused:  # every 120 s: a reminder 300 s before due no longer fits
        await api.execute(
            UPDATE,
            {"id": task["id"], "input": {"schedule": {"rrule": "FREQ=SECONDLY;INTERVAL=120"}}},
            token=token,
        )
    assert refused.value.field == "input.reminders.0.offsetSeconds"
    await api.execute(UPDATE, {"id": task["id"], "input": {"reminders": []}}, token=token)
    shown = await api.execute(
        "query($id: ID!) { task(id: $id) { reminders { before } } }", {"id": task["id"]}, token=token
    )
    assert shown["task"]["reminders"] == []

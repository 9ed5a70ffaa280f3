"""The dev clock, through the real API: a daily 07:00 task is driven through a miss, a streak and an appeal
in well under a minute, each advance bringing the schedule's next occurrence (never one twice); it is
refused where it is off, and a production process will not start with it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from harness.chain_support import eventually
from harness.media_factory import photo
from harness.proofloop import ROOT, ApiClient, child_env, done, file_var, free_port, partner_pair, upload
from tests.support.backends import Backend, Deployment, deployed

BERLIN = ZoneInfo("Europe/Berlin")
SETTLED_SECONDS = 60  # a deadline a second out, settled by a worker (generous: a shared machine)
REFUSED = "userErrors { field code message reason }"
ADVANCE = f"""mutation($id: ID!, $in: Int!) {{
  devTaskAdvance(input: {{taskId: $id, dueInSeconds: $in}}) {{
    task {{ currentInstance {{ id dueAt opensAt closesAt isOpen }} }} {REFUSED}
  }}
}}"""
HISTORY = """query($id: ID!) {
  task(id: $id) { streak currentInstance { id dueAt } instances(first: 20) { edges { node { id status } } } }
}"""
PHOTO = f"""mutation($input: ProofPhotoSubmitInput!) {{
  proofPhotoSubmit(input: $input) {{ verification {{ status instance {{ status }} }} {REFUSED} }}
}}"""


@pytest.fixture(scope="module")
def dev(backend: Backend, request: pytest.FixtureRequest) -> Iterator[Deployment]:
    with deployed(request, backend, {"PROOFLOOP_ENV": "dev", "PROOFLOOP_DEV_CLOCK": "true"}) as deployment:
        yield deployment


def daily_at_seven() -> dict[str, Any]:
    tomorrow = (datetime.now(BERLIN) + timedelta(days=1)).replace(hour=7, minute=0, second=0, microsecond=0)
    return {
        "title": "Morning run",
        "method": "PHOTO",
        "schedule": {
            "startsAt": tomorrow.isoformat(),
            "rrule": "FREQ=DAILY",
            "timezone": "Europe/Berlin",
            "windowSeconds": 3600,
            "graceSeconds": 0,
        },
    }


async def advance(api: ApiClient, token: str, task_id: str, due_in: int) -> dict[str, Any]:
    answer = done(await api.execute(ADVANCE, {"id": task_id, "in": due_in}, token=token), "devTaskAdvance")
    instance: dict[str, Any] = answer["task"]["currentInstance"]
    return instance


async def statuses(api: ApiClient, token: str, task_id: str) -> list[str]:
    task = (await api.execute(HISTORY, {"id": task_id}, token=token))["task"]
    return [edge["node"]["status"] for edge in task["instances"]["edges"]]


@pytest.mark.both_backends
async def test_a_daily_task_goes_through_a_miss_a_streak_and_an_appeal_in_seconds(dev: Deployment) -> None:
    api = dev.client()
    owner, _, partner, _ = await partner_pair(api)
    create = (
        f"mutation($input: TaskCreateInput!) {{ taskCreate(input: $input) {{ task {{ id }} {REFUSED} }} }}"
    )
    task_id = done(await api.execute(create, {"input": daily_at_seven()}, token=owner), "taskCreate")["task"][
        "id"
    ]

    # a miss: the first occurrence (tomorrow 07:00) brought to a second from now, and left alone
    first = await advance(api, owner, task_id, 1)
    assert first["isOpen"] and datetime.fromisoformat(first["dueAt"]) < datetime.now(UTC) + timedelta(
        seconds=5
    )

    async def missed() -> bool:
        return (await statuses(api, owner, task_id))[-1:] == ["MISSED"]

    await eventually(missed, SETTLED_SECONDS, "the advanced instance settled MISSED")

    # a streak: the next three occurrences, each brought forward and proved with a fresh photo
    for seed in (71, 72, 73):
        current = await advance(api, owner, task_id, 120)
        proved = await upload(
            api, PHOTO, {"input": {"instanceId": current["id"], "photo": file_var(photo(seed))}}, token=owner
        )
        assert done(proved, "proofPhotoSubmit")["verification"]["instance"]["status"] == "VERIFIED"
    task = (await api.execute(HISTORY, {"id": task_id}, token=owner))["task"]
    assert task["streak"] == 3
    # each advance brought the schedule's next occurrence: after four, the open one is the fifth morning
    fifth = datetime.fromisoformat(task["currentInstance"]["dueAt"]).astimezone(BERLIN)
    tomorrow = (datetime.now(BERLIN) + timedelta(days=1)).date()
    assert (fifth.date(), fifth.hour, fifth.minute) == (tomorrow + timedelta(days=4), 7, 0)

    # an appeal of the miss, upheld by the partner: four in a row
    missed_id = (await api.execute(HISTORY, {"id": task_id}, token=owner))["task"]["instances"]["edges"][-1]
    appeal = f"""mutation($i: ID!) {{
      appealCreate(input: {{instanceId: $i, note: "ran, phone died"}}) {{ verification {{ id }} {REFUSED} }}
    }}"""
    appealed = done(await api.execute(appeal, {"i": missed_id["node"]["id"]}, token=owner), "appealCreate")
    decide = f"""mutation($v: ID!) {{
      reviewDecide(input: {{verificationId: $v, approve: true}}) {{ verification {{ status }} {REFUSED} }}
    }}"""
    done(await api.execute(decide, {"v": appealed["verification"]["id"]}, token=partner), "reviewDecide")
    after = (await api.execute(HISTORY, {"id": task_id}, token=owner))["task"]
    assert sorted(await statuses(api, owner, task_id)) == [
        "PENDING",
        "VERIFIED",
        "VERIFIED",
        "VERIFIED",
        "VERIFIED",
    ]
    assert after["streak"] == 4


async def test_the_dev_clock_is_refused_where_it_is_off(api: ApiClient) -> None:
    token, _ = await api.register()
    create = (
        f"mutation($input: TaskCreateInput!) {{ taskCreate(input: $input) {{ task {{ id }} {REFUSED} }} }}"
    )
    task_id = done(await api.execute(create, {"input": daily_at_seven()}, token=token), "taskCreate")["task"][
        "id"
    ]
    answer = (await api.execute(ADVANCE, {"id": task_id, "in": 1}, token=token))["devTaskAdvance"]
    assert answer["task"] is None
    assert [(e["code"], "PROOFLOOP_DEV_CLOCK" in e["message"]) for e in answer["userErrors"]] == [
        ("FORBIDDEN", True)
    ]
    task = (await api.execute(HISTORY, {"id": task_id}, token=token))["task"]
    assert datetime.fromisoformat(task["currentInstance"]["dueAt"]) > datetime.now(UTC) + timedelta(hours=1)


@pytest.mark.unit
def test_a_production_process_refuses_to_start_with_the_dev_clock(tmp_path: Any) -> None:
    secret = "a-secret-that-must-not-be-printed"
    env = child_env(
        {
            "PROOFLOOP_DEV_CLOCK": "true",
            "PROOFLOOP_ENV": "production",
            "PROOFLOOP_DATA_DIR": str(tmp_path),
            "PROOFLOOP_SECRET_KEY": secret,
        }
    )
    started = subprocess.run(
        [sys.executable, "-m", "cli", "serve", "--port", str(free_port())],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode != 0
    assert "PROOFLOOP_DEV_CLOCK" in started.stderr and "PROOFLOOP_ENV=dev" in started.stderr
    assert secret[:6] not in started.stderr + started.stdout  # the refusal prints no other setting


async def test_only_the_owner_moves_a_tasks_clock(dev: Deployment) -> None:
    api = dev.client()
    owner, _ = await api.register()
    stranger, _ = await api.register()
    create = (
        f"mutation($input: TaskCreateInput!) {{ taskCreate(input: $input) {{ task {{ id }} {REFUSED} }} }}"
    )
    task_id = done(await api.execute(create, {"input": daily_at_seven()}, token=owner), "taskCreate")["task"][
        "id"
    ]
    answer = (await api.execute(ADVANCE, {"id": task_id, "in": 1}, token=stranger))["devTaskAdvance"]
    assert [e["code"] for e in answer["userErrors"]] == ["NOT_FOUND"]
    far = (await api.execute(ADVANCE, {"id": task_id, "in": 10**6}, token=owner))["devTaskAdvance"]
    assert [(e["field"], e["code"]) for e in far["userErrors"]] == [
        (["input", "dueInSeconds"], "BAD_USER_INPUT")
    ]
    task = (await api.execute(HISTORY, {"id": task_id}, token=owner))["task"]
    assert datetime.fromisoformat(task["currentInstance"]["dueAt"]) > datetime.now(UTC) + timedelta(hours=1)

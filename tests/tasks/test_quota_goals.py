"""Quota goals through the real API: "3 check-ins a week" is one instance per week in the task's zone,
VERIFIED on the third counted proof (the next week planned at once), with a minimum gap between counted
proofs, partner reviews that count when approved, and every malformed quota refused by its field. The
period's end (MISSED with two) across a clock change runs on a shifted clock: test_quota_period_end.py."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from harness.media_factory import photo
from harness.proofloop import BERLIN, ApiClient, GraphQLFailure, file_var, partner_pair, upload
from tests.support.quota_goals import CHECK_IN, CREATE, INSTANCE, TASK, quota_task

BERLIN_ZONE = ZoneInfo("Europe/Berlin")
SUBMIT_PHOTO = """mutation($id: ID!, $photo: Upload!) {
  submitPhoto(instanceId: $id, photo: $photo) { status reason } }"""


def local(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(BERLIN_ZONE)


async def test_a_goal_made_without_a_gap_gets_ten_minutes_or_what_its_count_fits(api: ApiClient) -> None:
    token, _ = await api.register()
    weekly = {**quota_task("GPS", {}), "quota": {"count": 3, "period": "WEEK"}}  # no minGapSeconds
    task = (await api.execute(CREATE, {"input": weekly}, token=token))["createTask"]
    assert task["quota"]["minGapSeconds"] == 600
    week = task["currentInstance"]
    first = (await api.execute(CHECK_IN, {"id": week["id"]}, token=token))["checkIn"]
    again = (await api.execute(CHECK_IN, {"id": week["id"]}, token=token))["checkIn"]
    assert (first["status"], again) == ("ACCEPTED", {"status": "REJECTED", "reason": "WITHIN_MIN_GAP"})
    counted = (await api.execute(INSTANCE, {"id": week["id"]}, token=token))["instance"]["proofsCounted"]
    assert counted == 1  # one gym visit, however many check-ins a minute holds
    hundred = {**quota_task("GPS", {}), "quota": {"count": 100, "period": "DAY"}}
    busy = (await api.execute(CREATE, {"input": hundred}, token=token))["createTask"]
    assert busy["quota"]["minGapSeconds"] == 414  # 99 gaps of 414 s fit in a 23-hour day


async def test_the_third_check_in_of_the_week_verifies_it_early_and_plans_next_week(api: ApiClient) -> None:
    token, _ = await api.register()
    task = (
        await api.execute(CREATE, {"input": quota_task("GPS", {"count": 3, "period": "WEEK"})}, token=token)
    )["createTask"]
    assert task["quota"] == {"count": 3, "period": "WEEK", "weekStartsOn": "MONDAY", "minGapSeconds": 0}
    assert task["schedule"]["windowSeconds"] == 0 and task["schedule"]["graceSeconds"] == 0
    week = task["currentInstance"]
    opens, due = local(week["opensAt"]), local(week["dueAt"])
    # this week in Berlin: Monday 00:00 to the next Monday 00:00, wall clock
    today = datetime.now(BERLIN_ZONE).date()
    assert opens.date() == today - timedelta(days=today.weekday()) and opens.weekday() == 0
    assert (opens.hour, opens.minute, due.hour, due.minute) == (0, 0, 0, 0)
    assert due.date() - opens.date() == timedelta(days=7)
    assert (week["proofsCounted"], week["proofsRequired"], week["closesAt"]) == (0, 3, week["dueAt"])

    for n in (1, 2):
        assert (await api.execute(CHECK_IN, {"id": week["id"]}, token=token))["checkIn"][
            "status"
        ] == "ACCEPTED"
        instance = (await api.execute(INSTANCE, {"id": week["id"]}, token=token))["instance"]
        assert (instance["status"], instance["proofsCounted"]) == ("PENDING", n)
    await api.execute(CHECK_IN, {"id": week["id"]}, token=token)
    instance = (await api.execute(INSTANCE, {"id": week["id"]}, token=token))["instance"]
    assert (instance["status"], instance["proofsCounted"]) == ("VERIFIED", 3)

    following = (await api.execute(TASK, {"id": task["id"]}, token=token))["task"]["currentInstance"]
    assert following["id"] != week["id"] and following["status"] == "PENDING"
    assert following["opensAt"] == week["dueAt"]  # the next week, not a proof window inside this one
    assert local(following["dueAt"]).date() - due.date() == timedelta(days=7)
    assert following["proofsCounted"] == 0
    early = (await api.execute(CHECK_IN, {"id": following["id"]}, token=token))["checkIn"]  # opens Monday
    assert early == {"status": "REJECTED", "reason": "OUTSIDE_WINDOW"}


async def test_a_proof_inside_the_minimum_gap_does_not_count(api: ApiClient) -> None:
    token, _ = await api.register()
    quota = {"count": 2, "period": "DAY", "minGapSeconds": 3600}
    task = (await api.execute(CREATE, {"input": quota_task("GPS", quota)}, token=token))["createTask"]
    day = task["currentInstance"]
    assert local(day["dueAt"]) - local(day["opensAt"]) in (timedelta(hours=h) for h in (23, 24, 25))
    assert (await api.execute(CHECK_IN, {"id": day["id"]}, token=token))["checkIn"]["status"] == "ACCEPTED"
    second = (await api.execute(CHECK_IN, {"id": day["id"]}, token=token))["checkIn"]
    assert second == {"status": "REJECTED", "reason": "WITHIN_MIN_GAP"}
    instance = (await api.execute(INSTANCE, {"id": day["id"]}, token=token))["instance"]
    assert (instance["status"], instance["proofsCounted"]) == ("PENDING", 1)


async def test_one_photo_sent_three_times_counts_once_and_three_photos_count_three(api: ApiClient) -> None:
    """Reuse is judged inside a quota period as across instances: one photo is one visit."""
    token, _ = await api.register()
    quota = {"count": 3, "period": "WEEK"}
    week = (await api.execute(CREATE, {"input": quota_task("PHOTO", quota)}, token=token))["createTask"][
        "currentInstance"
    ]
    same = photo(41)
    answers = [
        (await upload(api, SUBMIT_PHOTO, {"id": week["id"], "photo": file_var(same)}, token=token))[
            "submitPhoto"
        ]
        for _ in range(3)
    ]
    assert [(a["status"], a["reason"]) for a in answers] == [
        ("ACCEPTED", None),
        ("REJECTED", "REUSED_MEDIA"),
        ("REJECTED", "REUSED_MEDIA"),
    ]
    instance = (await api.execute(INSTANCE, {"id": week["id"]}, token=token))["instance"]
    assert (instance["status"], instance["proofsCounted"]) == ("PENDING", 1)
    for seed in (42, 43):
        sent = await upload(
            api, SUBMIT_PHOTO, {"id": week["id"], "photo": file_var(photo(seed))}, token=token
        )
        assert sent["submitPhoto"]["status"] == "ACCEPTED", sent
    instance = (await api.execute(INSTANCE, {"id": week["id"]}, token=token))["instance"]
    assert (instance["status"], instance["proofsCounted"]) == ("VERIFIED", 3)


async def test_a_month_of_photos_counts_and_a_day_quota_needs_only_its_count(api: ApiClient) -> None:
    token, _ = await api.register()
    month = (
        await api.execute(
            CREATE, {"input": quota_task("PHOTO", {"count": 20, "period": "MONTH"})}, token=token
        )
    )["createTask"]["currentInstance"]
    opens, due = local(month["opensAt"]), local(month["dueAt"])
    assert (opens.day, due.day, opens.hour, due.hour) == (1, 1, 0, 0)
    assert (due.year * 12 + due.month) - (opens.year * 12 + opens.month) == 1
    assert month["proofsRequired"] == 20
    once = (
        await api.execute(CREATE, {"input": quota_task("GPS", {"count": 1, "period": "DAY"})}, token=token)
    )["createTask"]["currentInstance"]
    await api.execute(CHECK_IN, {"id": once["id"]}, token=token)
    assert (await api.execute(INSTANCE, {"id": once["id"]}, token=token))["instance"]["status"] == "VERIFIED"


async def test_partner_reviews_wait_inside_the_period_and_count_when_approved(api: ApiClient) -> None:
    owner, _, partner, _ = await partner_pair(api)
    quota = {"count": 2, "period": "WEEK", "weekStartsOn": "SUNDAY"}
    task = (await api.execute(CREATE, {"input": quota_task("PARTNER", quota)}, token=owner))["createTask"]
    week = task["currentInstance"]
    assert local(week["opensAt"]).weekday() == 6  # Sunday
    ask = 'mutation($id: ID!) { requestReview(instanceId: $id, note: "lifted") { id status } }'
    first = (await api.execute(ask, {"id": week["id"]}, token=owner))["requestReview"]
    second = (await api.execute(ask, {"id": week["id"]}, token=owner))["requestReview"]
    assert first["status"] == second["status"] == "PENDING_REVIEW"
    instance = (await api.execute(INSTANCE, {"id": week["id"]}, token=owner))["instance"]
    assert (instance["status"], instance["proofsCounted"]) == ("PENDING", 0)  # still open to proofs
    queue = (await api.execute("{ reviewQueue { id } }", token=partner))["reviewQueue"]
    assert {r["id"] for r in queue} == {first["id"], second["id"]}

    decide = "mutation($id: ID!, $a: Boolean!) { review(verificationId: $id, approve: $a) { status reason } }"
    assert (await api.execute(decide, {"id": first["id"], "a": False}, token=partner))["review"] == {
        "status": "REJECTED",
        "reason": "PARTNER_REJECTED",
    }
    await api.execute(decide, {"id": second["id"], "a": True}, token=partner)
    instance = (await api.execute(INSTANCE, {"id": week["id"]}, token=owner))["instance"]
    assert (instance["status"], instance["proofsCounted"]) == ("PENDING", 1)
    third = (await api.execute(ask, {"id": week["id"]}, token=owner))["requestReview"]
    await api.execute(decide, {"id": third["id"], "a": True}, token=partner)
    instance = (await api.execute(INSTANCE, {"id": week["id"]}, token=owner))["instance"]
    assert (instance["status"], instance["proofsCounted"]) == ("VERIFIED", 2)
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(decide, {"id": first["id"], "a": True}, token=partner)
    assert failure.value.code == "CONFLICT"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"quota": {"count": 0, "period": "WEEK"}}, "input.quota.count"),
        ({"quota": {"count": 101, "period": "WEEK"}}, "input.quota.count"),
        ({"quota": {"count": 3, "period": "DAY", "minGapSeconds": 43200}}, "input.quota.minGapSeconds"),
        ({"quota": {"count": 2, "period": "WEEK", "minGapSeconds": -1}}, "input.quota.minGapSeconds"),
        ({"schedule": {"startsAt": "2026-12-01T00:00:00Z", "rrule": "FREQ=DAILY"}}, "input.schedule.rrule"),
        (
            {"schedule": {"startsAt": "2026-12-01T00:00:00Z", "graceSeconds": 60}},
            "input.schedule.graceSeconds",
        ),
        ({"schedule": {"startsAt": "9999-12-31T23:59:59Z"}}, "input.schedule.startsAt"),
        ({"schedule": {"startsAt": "0001-01-01T00:00:00Z"}}, "input.schedule.startsAt"),
        (
            {
                "gps": {
                    "center": {"latitude": BERLIN[0], "longitude": BERLIN[1]},
                    "radiusMeters": 100,
                    "avoid": True,
                }
            },
            "input.quota",
        ),
    ],
)
async def test_a_malformed_quota_is_refused_by_its_field(
    api: ApiClient, change: dict[str, Any], field: str
) -> None:
    token, _ = await api.register()
    task_input = {**quota_task("GPS", {"count": 3, "period": "WEEK"}), **change}
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(CREATE, {"input": task_input}, token=token)
    assert failure.value.code == "BAD_USER_INPUT"
    assert failure.value.field == field
    assert (await api.execute("{ tasks { totalCount } }", token=token))["tasks"]["totalCount"] == 0


async def test_a_quota_goals_schedule_cannot_be_edited_into_another(api: ApiClient) -> None:
    token, _ = await api.register()
    task = (
        await api.execute(CREATE, {"input": quota_task("GPS", {"count": 3, "period": "WEEK"})}, token=token)
    )["createTask"]
    edit = 'mutation($id: ID!) { updateTask(id: $id, input: {schedule: {rrule: "FREQ=DAILY"}}) { id } }'
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(edit, {"id": task["id"]}, token=token)
    assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", "input.schedule")


EDIT = """mutation($id: ID!, $q: QuotaPatchInput!) { updateTask(id: $id, input: {quota: $q}) {
  quota { count minGapSeconds } pendingChange { quotaCount quotaMinGapSeconds }
  currentInstance { id status proofsRequired } } }"""


async def test_a_lower_count_that_a_period_already_holds_verifies_it(api: ApiClient) -> None:
    token, _ = await api.register()
    task = (
        await api.execute(CREATE, {"input": quota_task("GPS", {"count": 3, "period": "WEEK"})}, token=token)
    )["createTask"]
    week = task["currentInstance"]["id"]
    for _ in range(2):
        await api.execute(CHECK_IN, {"id": week}, token=token)
    edited = (await api.execute(EDIT, {"id": task["id"], "q": {"count": 2}}, token=token))["updateTask"]
    assert edited["quota"]["count"] == 2 and edited["pendingChange"] is None  # no horizon: at once
    assert (await api.execute(INSTANCE, {"id": week}, token=token))["instance"]["status"] == "VERIFIED"
    assert edited["currentInstance"]["id"] != week and edited["currentInstance"]["proofsRequired"] == 2


async def test_under_a_horizon_a_lower_count_or_gap_waits_and_a_higher_one_applies_at_once(
    api: ApiClient,
) -> None:
    token, _ = await api.register()
    quota = {"count": 3, "period": "WEEK", "minGapSeconds": 3600}
    task = (await api.execute(CREATE, {"input": quota_task("GPS", quota)}, token=token))["createTask"]
    await api.execute("mutation { setCommitmentHorizon(days: 1) { id } }", token=token)
    easier = (
        await api.execute(EDIT, {"id": task["id"], "q": {"count": 2, "minGapSeconds": 0}}, token=token)
    )["updateTask"]
    assert easier["quota"] == {"count": 3, "minGapSeconds": 3600}
    assert easier["pendingChange"] == {"quotaCount": 2, "quotaMinGapSeconds": 0}
    harder = (await api.execute(EDIT, {"id": task["id"], "q": {"count": 5}}, token=token))["updateTask"]
    assert harder["quota"] == {"count": 5, "minGapSeconds": 3600}
    assert harder["currentInstance"]["proofsRequired"] == 5
    assert harder["pendingChange"] == {"quotaCount": None, "quotaMinGapSeconds": 0}  # superseded: 5 holds


async def test_a_quota_edit_is_refused_on_another_task_or_when_it_could_never_be_met(api: ApiClient) -> None:
    token, _ = await api.register()
    fixed = (
        await api.execute(
            CREATE,
            {
                "input": {
                    **quota_task("GPS", {"count": 1, "period": "DAY"}),
                    "quota": None,
                    "schedule": {
                        "startsAt": datetime.now(UTC).isoformat(),
                        "rrule": "FREQ=DAILY",
                        "windowSeconds": 600,
                    },
                }
            },
            token=token,
        )
    )["createTask"]
    goal = (
        await api.execute(CREATE, {"input": quota_task("GPS", {"count": 3, "period": "DAY"})}, token=token)
    )["createTask"]
    for task_id, q, field in (
        (fixed["id"], {"count": 2}, "input.quota"),
        (goal["id"], {"count": 0}, "input.quota.count"),
        (goal["id"], {"minGapSeconds": 43200}, "input.quota.minGapSeconds"),
    ):
        with pytest.raises(GraphQLFailure) as failure:
            await api.execute(EDIT, {"id": task_id, "q": q}, token=token)
        assert (failure.value.code, failure.value.field) == ("BAD_USER_INPUT", field)


async def test_concurrent_proofs_count_once_each_and_verify_the_period_once(api: ApiClient) -> None:
    token, _ = await api.register()
    task = (
        await api.execute(CREATE, {"input": quota_task("GPS", {"count": 3, "period": "WEEK"})}, token=token)
    )["createTask"]
    week = task["currentInstance"]["id"]

    async def check_in() -> str:
        try:
            return str((await api.execute(CHECK_IN, {"id": week}, token=token))["checkIn"]["status"])
        except GraphQLFailure as failure:
            return failure.code

    outcomes = await asyncio.gather(*(check_in() for _ in range(8)))
    assert outcomes.count("ACCEPTED") == 3  # the rest find the week VERIFIED: CONFLICT
    assert set(outcomes) <= {"ACCEPTED", "CONFLICT"}
    instance = (await api.execute(INSTANCE, {"id": week}, token=token))["instance"]
    assert (instance["status"], instance["proofsCounted"]) == ("VERIFIED", 3)
    events = "query($t: ID) { events(taskId: $t) { type } }"
    kinds = [e["type"] for e in (await api.execute(events, {"t": task["id"]}, token=token))["events"]]
    assert kinds.count("VERIFIED") == 1 and kinds.count("PROOF_SUBMITTED") == 3

"""The client guide's operations (docs/clients/operations/) are what an app sends: each validates against the
schema without a deprecated field, graphql-codegen types them and TypeScript compiles an app's use of them
(and refuses one that reads a field that is not there), and an app's screens run them, in order, through
the real API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from graphql import NoDeprecatedCustomRule, build_schema, parse, validate
from graphql.validation import specified_rules

from harness.chain_support import eventually
from harness.mailbox import mailed_token
from harness.media_factory import photo
from harness.proofloop import ROOT, ApiClient, done, file_var, open_schedule

GUIDE = ROOT / "docs" / "clients"
OPERATIONS = {path.stem: path.read_text() for path in sorted((GUIDE / "operations").glob("*.graphql"))}
CHAIN_SECONDS = 60  # a deadline two seconds out, settled by the run's worker (generous: a shared machine)
CLIENTS = ROOT / "tests" / "clients" / "node_modules"
needs_npm = pytest.mark.skipif(
    not (CLIENTS / ".bin" / "graphql-codegen").exists(), reason="codegen needs npm"
)


@pytest.mark.unit
def test_every_screen_is_covered_and_its_operations_fit_the_schema_without_deprecated_names() -> None:
    assert set(OPERATIONS) == {"sign-up", "home", "task", "proof", "partner-review", "history", "settings"}
    schema = build_schema((ROOT / "schema.graphql").read_text())
    for screen, document in OPERATIONS.items():
        errors = validate(schema, parse(document), [*specified_rules, NoDeprecatedCustomRule])
        assert errors == [], f"{screen}: {[e.message for e in errors]}"


def _codegen(workdir: Path) -> None:
    """docs/clients/codegen.json run as an app team runs it, in `workdir` (the generated files land there)."""
    for part in ("operations", "typescript", "tsconfig.json"):
        source = GUIDE / part
        (shutil.copytree if source.is_dir() else shutil.copy)(source, workdir / part)
    config = json.loads((GUIDE / "codegen.json").read_text())
    config["schema"] = str(ROOT / "schema.graphql")
    (workdir / "codegen.json").write_text(json.dumps(config))
    (workdir / "node_modules").symlink_to(CLIENTS)  # the pinned codegen and TypeScript (tests/clients)
    env = {**os.environ, "NO_COLOR": "1"}
    run = [str(CLIENTS / ".bin" / "graphql-codegen"), "--config", "codegen.json"]
    generated = subprocess.run(run, cwd=workdir, capture_output=True, text=True, timeout=180, env=env)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    assert (workdir / "generated" / "graphql.ts").exists()


def _compile(workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLIENTS / ".bin" / "tsc"), "-p", "tsconfig.json"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=180,
    )


@needs_npm
@pytest.mark.unit
def test_codegen_types_the_operations_and_typescript_compiles_an_apps_use_of_them(tmp_path: Path) -> None:
    _codegen(tmp_path)
    compiled = _compile(tmp_path)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    generated = (tmp_path / "generated" / "graphql.ts").read_text()
    assert "export type CreateTaskMutation" in generated and "userErrors" in generated
    # an app that reads a field the schema does not have fails to compile
    screens = tmp_path / "typescript" / "screens.ts"
    screens.write_text(screens.read_text().replace("answer.taskCreate.task;", "answer.taskCreate.tasks;"))
    broken = _compile(tmp_path)
    assert broken.returncode != 0 and "tasks" in broken.stdout, broken.stdout + broken.stderr


async def run(
    api: ApiClient, screen: str, operation: str, variables: dict[str, Any] | None = None, **kw: Any
) -> Any:
    """One named operation of a screen's file, as the app sends it."""
    return await api.execute(OPERATIONS[screen], variables, operation_name=operation, **kw)


async def test_an_apps_screens_run_their_operations_through_the_api(api: ApiClient) -> None:
    stamp = datetime.now(UTC).strftime("%H%M%S%f")
    # sign up: Ann (held accountable) and Ben (her partner, who confirms his address)
    ann = done(
        await run(
            api,
            "sign-up",
            "SignUp",
            {
                "input": {
                    "email": f"ann{stamp}@example.com",
                    "password": "a long password",
                    "displayName": "Ann",
                    "timezone": "Europe/Berlin",
                }
            },
        ),
        "accountRegister",
    )["token"]
    ben_email = f"ben{stamp}@example.com"
    ben_input = {"email": ben_email, "password": "a long password", "displayName": "Ben"}
    done(await run(api, "sign-up", "SignUp", {"input": ben_input}), "accountRegister")
    ben = done(
        await run(api, "sign-up", "SignIn", {"input": {"email": ben_email, "password": "a long password"}}),
        "sessionCreate",
    )["token"]
    assert api.mailbox is not None
    for email in (f"ann{stamp}@example.com", ben_email):  # the link in the mail each was sent
        link = await api.mailbox.wait_for(email, "Confirm your email")
        verified = done(
            await run(api, "sign-up", "VerifyEmail", {"token": mailed_token(link)}), "emailVerify"
        )
        assert verified["user"]["emailVerified"] is True

    # task: a daily photo task open now, shown, then renamed
    schedule = open_schedule()
    created = done(
        await run(
            api,
            "task",
            "CreateTask",
            {"input": {"title": "Run", "method": "PHOTO", "schedule": schedule}},
            token=ann,
        ),
        "taskCreate",
    )["task"]
    shown = (await run(api, "task", "TaskScreen", {"id": created["id"]}, token=ann))["task"]
    assert shown["currentInstance"]["isOpen"] and len(shown["upcoming"]) == 5
    renamed = done(
        await run(
            api, "task", "UpdateTask", {"input": {"id": created["id"], "title": "Morning run"}}, token=ann
        ),
        "taskUpdate",
    )
    assert renamed["task"]["title"] == "Morning run"

    # home: today's agenda and the task's card
    now = datetime.now(UTC)
    span = {"from": (now - timedelta(hours=1)).isoformat(), "to": (now + timedelta(days=1)).isoformat()}
    home = await run(api, "home", "Home", span, token=ann)
    assert home["tasks"]["totalCount"] == 1 and home["agenda"]["totalCount"] >= 1
    instance_id = home["tasks"]["edges"][0]["node"]["currentInstance"]["id"]

    # proof: a photo, in a multipart request with the file inside the input
    photo_input = {"input": {"instanceId": instance_id, "photo": file_var(photo(31))}}
    proved = done(
        await run(api, "proof", "SubmitPhoto", photo_input, token=ann, upload_files=True), "proofPhotoSubmit"
    )
    assert proved["verification"]["status"] == "ACCEPTED"

    # partner review: Ann invites Ben, Ben accepts; a PARTNER task's proof is decided by Ben
    invited = done(
        await run(api, "partner-review", "InvitePartner", {"email": ben_email}, token=ann),
        "partnershipInvite",
    )
    accepted = done(
        await run(
            api,
            "partner-review",
            "RespondToInvite",
            {"partnershipId": invited["partnership"]["id"], "accept": True},
            token=ben,
        ),
        "partnershipRespond",
    )
    assert accepted["partnership"]["viewerRole"] == "PARTNER"
    listed = (await run(api, "partner-review", "Partnerships", token=ann))["partnershipsConnection"]
    assert [e["node"]["viewerRole"] for e in listed["edges"]] == ["OWNER"]
    review_task = done(
        await run(
            api,
            "task",
            "CreateTask",
            {
                "input": {
                    "title": "Journal",
                    "method": "PARTNER",
                    "schedule": open_schedule(),
                    "partnerReview": {"reviewWindowSeconds": 3600, "onTimeout": "REJECT"},
                }
            },
            token=ann,
        ),
        "taskCreate",
    )["task"]
    asked = done(
        await run(
            api,
            "proof",
            "RequestReview",
            {"input": {"instanceId": review_task["currentInstance"]["id"], "note": "wrote two pages"}},
            token=ann,
        ),
        "reviewRequest",
    )
    queue = (await run(api, "partner-review", "ReviewQueue", token=ben))["reviewQueueConnection"]
    assert queue["totalCount"] == 1 and queue["edges"][0]["node"]["id"] == asked["verification"]["id"]
    decided = done(
        await run(
            api,
            "partner-review",
            "DecideReview",
            {"input": {"verificationId": asked["verification"]["id"], "approve": True}},
            token=ben,
        ),
        "reviewDecide",
    )
    assert decided["verification"]["instance"]["status"] == "VERIFIED"
    judged = await run(
        api,
        "partner-review",
        "DecideReview",
        {"input": {"verificationId": proved["verification"]["id"], "approve": False}},
        token=ben,
    )
    assert [e["reason"] for e in judged["reviewDecide"]["userErrors"]] == ["JUDGED_BY_METHOD"]

    # history: a one-off walk nobody proves is MISSED at its deadline, and Ann appeals it to Ben
    walk_starts = (datetime.now(UTC) + timedelta(seconds=2)).replace(microsecond=0)
    walk_schedule = {
        "startsAt": walk_starts.isoformat(),
        "timezone": "UTC",
        "windowSeconds": 60,
        "graceSeconds": 0,
    }
    walk = done(
        await run(
            api,
            "task",
            "CreateTask",
            {"input": {"title": "Walk", "method": "PHOTO", "schedule": walk_schedule}},
            token=ann,
        ),
        "taskCreate",
    )["task"]
    today = datetime.now(UTC).date()
    week = {"from": str(today - timedelta(days=6)), "to": str(today)}

    async def walk_missed() -> bool:
        history = (await run(api, "history", "TaskHistory", {"id": walk["id"], **week}, token=ann))["task"]
        return [e["node"]["status"] for e in history["instances"]["edges"]] == ["MISSED"]

    await eventually(walk_missed, CHAIN_SECONDS, "the unproven walk settled MISSED")
    appealed = done(
        await run(
            api,
            "history",
            "Appeal",
            {"input": {"instanceId": walk["currentInstance"]["id"], "note": "I did walk"}},
            token=ann,
        ),
        "appealCreate",
    )
    assert appealed["verification"]["status"] == "PENDING_REVIEW"
    today = datetime.now(UTC).date()
    history = (
        await run(
            api,
            "history",
            "TaskHistory",
            {"id": created["id"], "from": str(today - timedelta(days=6)), "to": str(today)},
            token=ann,
        )
    )["task"]
    assert len(history["progress"]["calendar"]) == 7 and history["instances"]["totalCount"] >= 1
    events = (await run(api, "history", "EventLog", token=ann))["eventsConnection"]
    assert events["totalCount"] >= 4  # the photo, the review, the miss and the appeal at least

    # settings: profile, horizon, export, then this device signs out
    settings = await run(api, "settings", "Settings", token=ann)
    assert (
        settings["me"]["profileTimezone"] == "Europe/Berlin"
        and settings["sessionsConnection"]["totalCount"] == 1
    )
    done(
        await run(api, "settings", "UpdateProfile", {"input": {"displayName": "Ann B."}}, token=ann),
        "profileUpdate",
    )
    done(
        await run(api, "settings", "SetCommitmentHorizon", {"days": 2}, token=ann), "commitmentHorizonUpdate"
    )
    done(await run(api, "settings", "ExportMyData", token=ann), "dataExportRequest")
    signed_out = done(await run(api, "settings", "SignOut", token=ann), "sessionRevoke")
    assert signed_out["revokedSessionId"] == settings["sessionsConnection"]["edges"][0]["node"]["id"]

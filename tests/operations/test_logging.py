"""`proofloop serve` with PROOFLOOP_LOG_FORMAT=json: JSON lines only, and never a password, token or key."""

from __future__ import annotations

import contextlib
import json
import uuid

import websockets
from websockets.typing import Subprotocol

from harness.mailbox import Mailbox, mailed_token
from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess, WorkerProcess, free_port, local_http

PASSWORD = "never-log-this-password"


async def test_json_logs_carry_no_secrets(service_env: dict[str, str]) -> None:
    env = {**service_env, "PROOFLOOP_LOG_FORMAT": "json", "PROOFLOOP_LOG_LEVEL": "DEBUG"}
    email = f"logs-{uuid.uuid4().hex[:8]}@example.com"
    with ServerProcess(env, port=free_port()) as server:
        api = ApiClient(server.url)
        registered = await api.execute(
            """mutation($e: String!, $p: String!) {
                 register(email: $e, password: $p, displayName: "Logs") { token } }""",
            {"e": email, "p": PASSWORD},
        )
        logged_in = await api.execute(
            "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { token } }",
            {"e": email, "p": PASSWORD},
        )
        token = logged_in["login"]["token"]
        await api.execute("{ me { displayName } }", token=token)
        await api.execute("mutation { logout }", token=token)
    log = server.log()

    lines = [line for line in log.splitlines() if line.strip()]
    assert any('"POST /graphql' in json.loads(line)["message"] for line in lines)
    for line in lines:
        entry = json.loads(line)
        assert {"time", "level", "logger", "message"} <= entry.keys()
    for secret in (PASSWORD, registered["register"]["token"], token, env["PROOFLOOP_SECRET_KEY"]):
        assert secret not in log


async def test_no_auth_path_logs_a_secret(
    service_env: dict[str, str], worker: WorkerProcess, mailbox: Mailbox
) -> None:
    """Every auth path, wrong and right, with secrets as literals and as variables: none reaches a log."""
    env = {**service_env, "PROOFLOOP_LOG_LEVEL": "DEBUG"}
    email = f"secrets-{uuid.uuid4().hex[:8]}@example.com"
    secrets = {
        "password": "first-secret-passphrase",
        "wrong": "wrong-secret-passphrase",
        "reset": "reset-secret-passphrase",
        "changed": "changed-secret-passphrase",
        "weak": "1234567890",
        "sig": "f" * 40 + "deadbeef",
        "query": "literal-secret-in-a-get-query",
        "ws": "secret-in-a-websocket-query",
    }
    with ServerProcess(env, port=free_port()) as server:
        api = ApiClient(server.url, mailbox)
        reg = f'mutation {{ register(email: "{email}", password: "{secrets["password"]}", displayName: "S") {{ token }} }}'
        first = (await api.execute(reg))["register"]["token"]
        with contextlib.suppress(GraphQLFailure):  # CONFLICT, with the password as a literal
            await api.execute(reg)
        with contextlib.suppress(GraphQLFailure):  # UNAUTHENTICATED, likewise
            await api.execute(
                f'mutation {{ login(email: "{email}", password: "{secrets["wrong"]}") {{ token }} }}'
            )
        login = "mutation($e: String!, $p: String!) { login(email: $e, password: $p) { token } }"
        second = (await api.execute(login, {"e": email, "p": secrets["password"]}))["login"]["token"]
        verify_token = mailed_token(await mailbox.wait_for(email, "Confirm your email"))
        await api.execute(f'mutation {{ verifyEmail(token: "{verify_token}") {{ id }} }}')
        with contextlib.suppress(GraphQLFailure):  # used: BAD_USER_INPUT
            await api.execute("mutation($t: String!) { verifyEmail(token: $t) { id } }", {"t": verify_token})
        with contextlib.suppress(GraphQLFailure):
            await api.execute("mutation { requestEmailVerification }", token=second)
        await api.execute("mutation($e: String!) { requestPasswordReset(email: $e) }", {"e": email})
        reset_token = mailed_token(await mailbox.wait_for(email, "Reset your password"))
        reset = "mutation($t: String!, $p: String!) { resetPassword(token: $t, newPassword: $p) { token } }"
        with contextlib.suppress(GraphQLFailure):
            await api.execute(reset, {"t": reset_token, "p": secrets["weak"]})
        third = (await api.execute(reset, {"t": reset_token, "p": secrets["reset"]}))["resetPassword"][
            "token"
        ]
        change = "mutation($c: String!, $p: String!) { changePassword(currentPassword: $c, newPassword: $p) { token } }"
        with contextlib.suppress(GraphQLFailure):
            await api.execute(change, {"c": secrets["wrong"], "p": secrets["changed"]}, token=third)
        fourth = (await api.execute(change, {"c": secrets["reset"], "p": secrets["changed"]}, token=third))[
            "changePassword"
        ]["token"]
        await api.execute("mutation { logout }", token=fourth)
        with contextlib.suppress(GraphQLFailure):
            await api.execute("{ me { id } }", token=fourth)
        async with local_http(base_url=server.url) as http:
            await http.get(
                f"/media/{uuid.uuid4()}", params={"viewer": "x", "exp": "1", "sig": secrets["sig"]}
            )
            await http.get("/graphql", params={"query": f"{{ me {{ id }} }} # {secrets['query']}"})
        ws_url = server.url.replace("http://", "ws://") + f"/graphql?token={secrets['ws']}"
        async with websockets.connect(ws_url, subprotocols=[Subprotocol("graphql-transport-ws")]):
            pass
    logs = server.log() + worker.log()
    assert "POST /graphql" in logs and "GET /media/" in logs and "WebSocket /graphql" in logs  # lines were on
    used = [
        *secrets.values(),
        first,
        second,
        third,
        fourth,
        verify_token,
        reset_token,
        env["PROOFLOOP_SECRET_KEY"],
    ]
    leaked = [secret for secret in used if secret in logs]
    assert leaked == []

"""`proofloop serve` with PROOFLOOP_LOG_FORMAT=json: JSON lines only, and never a password, token or key."""

from __future__ import annotations

import json
import uuid

from tests.harness import ApiClient, ServerProcess, free_port

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

"""The graphql-http server audit (the GraphQL-over-HTTP spec's reference suite, npm) against the live API."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from harness.proofloop import ROOT, ServerProcess

CLIENTS = ROOT / "tests" / "clients"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (CLIENTS / "node_modules" / "graphql-http").exists(),
    reason="needs Node.js and `npm ci` in tests/clients (make test runs it)",
)


def test_every_must_and_should_of_the_graphql_over_http_audit_passes(server: ServerProcess) -> None:
    ran = subprocess.run(
        ["node", "audit.mjs", f"{server.url}/graphql"],
        cwd=CLIENTS,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    report = json.loads(ran.stdout)
    print(
        f"graphql-http audit: {report['total']} audits, {report['ok']} ok, "
        f"{report['warn']} warnings, {report['error']} failures"
    )
    assert report["problems"] == []
    assert report["error"] == 0 and report["warn"] == 0
    assert report["ok"] == report["total"] > 50

"""`proofloop dev` on a port that is already taken fails at once and starts nothing; `proofloop demo` finds
the API on PROOFLOOP_HOST/PROOFLOOP_PORT."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from harness.proofloop import ROOT, ServerProcess, WorkerProcess, child_env, free_port


def test_dev_on_a_busy_port_fails_fast_and_starts_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = subprocess.run(
            [sys.executable, "-m", "cli", "dev"],
            env=child_env({"PROOFLOOP_DATA_DIR": str(tmp_path), "PROOFLOOP_PORT": str(port)}),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert ran.returncode == 1
    assert f"127.0.0.1:{port} is already in use" in ran.stderr
    assert "Proofloop is running" not in ran.stderr
    assert list(tmp_path.iterdir()) == []  # no migrations, no embedded Redis, no worker


def test_demo_follows_proofloop_port(
    service_env: dict[str, str], spare_redis_url: str, tmp_path: Path
) -> None:
    # the embedded default's mail: .eml files under the data dir, which the demo reads its tokens from;
    # a Redis database no other worker reads keeps the run's workers (and their SMTP mailbox) out of it
    env = {k: v for k, v in service_env.items() if k != "PROOFLOOP_SMTP_URL"}
    env |= {"PROOFLOOP_DATA_DIR": str(tmp_path), "PROOFLOOP_REDIS_URL": spare_redis_url}
    with ServerProcess(env, port=free_port()) as server, WorkerProcess(env):
        ran = subprocess.run(
            [sys.executable, "-m", "cli", "demo", "--duration", "1"],
            env=child_env({**env, "PROOFLOOP_PORT": str(server.port)}),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=90,
        )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"{server.url}/graphql?query=" in ran.stdout

"""The pump's claim on PostgreSQL, in both branches: workers behind (no resends) and caught up."""

from __future__ import annotations

import json
import subprocess
import sys

from harness.proofloop import ROOT, child_env, migrated_database


def test_a_pump_behind_links_new_rows_and_leaves_overdue_ones(redis_url: str) -> None:
    with migrated_database("proofloop_pump") as database_url:
        done = subprocess.run(
            [sys.executable, "-m", "tests.support.pump_probe", database_url, redis_url],
            env=child_env({}),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    fresh, lost = seen["fresh"], seen["lost"]
    # behind: only the never-linked row gets its link; the overdue one is presumed queued
    assert seen["behind_sent"] == 1
    assert seen["after_behind"] == {fresh: 1, lost: 1}
    # caught up: the overdue link counts as lost and is resent
    assert seen["caught_up_sent"] == 1
    assert seen["after_caught_up"] == {fresh: 1, lost: 2}

"""The commitment horizon on the embedded default (SQLite + the embedded Redis), through the real API and
worker: a pending pause applied by the chain, and a proof just after effectiveAt judged by the new rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.proofloop import ApiClient, ServerProcess, WorkerProcess, free_port, migrated_sqlite
from tests.support.commitment_horizon import (
    DAY_SECONDS,
    pause_waits_then_the_chain_applies_it,
    proof_just_after_effective_at_meets_new_rules,
)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    data_dir: Path = tmp_path_factory.mktemp("embedded-horizon")
    env = {
        "PROOFLOOP_DATA_DIR": str(data_dir),
        "PROOFLOOP_SECRET_KEY": "k",
        "PROOFLOOP_MIN_INTERVAL_SECONDS": "1",
        "PROOFLOOP_PUMP_INTERVAL_SECONDS": "1",
        "PROOFLOOP_WORKER_METRICS_PORT": str(free_port()),
        "PROOFLOOP_COMMITMENT_HORIZON_DAY_SECONDS": DAY_SECONDS,
    }
    migrated_sqlite(data_dir)  # no PROOFLOOP_DATABASE_URL: the SQLite file under the data dir
    with ServerProcess(env, port=free_port()) as server, WorkerProcess(env):
        yield server


async def test_proof_just_after_effective_at_on_sqlite(embedded: ServerProcess) -> None:
    api = ApiClient(embedded.url)
    token, _ = await api.register()
    await proof_just_after_effective_at_meets_new_rules(api, token)


async def test_pause_applied_by_the_chain_on_sqlite(embedded: ServerProcess) -> None:
    api = ApiClient(embedded.url)
    token, _ = await api.register()
    await pause_waits_then_the_chain_applies_it(api, token)

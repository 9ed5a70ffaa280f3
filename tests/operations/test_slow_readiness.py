"""A readiness probe that times out declares no outage: on a loaded machine the probe itself may be what is
slow, and mutations running beside it must commit and answer their results, never SERVICE_UNAVAILABLE for
work that was done (a client retrying as told would apply it twice)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from harness.proofloop import ApiClient, ServerProcess, free_port, local_http, open_schedule

# no check can answer within a microsecond: every /readyz times out
NEVER_IN_TIME = {"PROOFLOOP_READY_TIMEOUT_SECONDS": "0.000001"}
CREATE = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"
TASKS = "{ tasks(first: 100) { edges { node { id } } } }"
MUTATIONS = 12
PROBES = 30


@pytest.fixture(scope="module")
def slow_probe_api(service_env: dict[str, str]) -> Iterator[ServerProcess]:
    with ServerProcess({**service_env, **NEVER_IN_TIME}, port=free_port(), ready_path="/healthz") as proc:
        yield proc


async def test_mutations_beside_timed_out_probes_commit_and_say_so(slow_probe_api: ServerProcess) -> None:
    api = ApiClient(slow_probe_api.url)
    token, _ = await api.register()

    async def create(n: int) -> str:
        task = {"title": f"Run {n}", "method": "PHOTO", "schedule": open_schedule(starts_in_seconds=3600)}
        created = await api.execute(CREATE, {"input": task}, token=token)
        return str(created["createTask"]["id"])

    async with local_http(base_url=slow_probe_api.url) as http:
        probing = asyncio.gather(*(http.get("/readyz") for _ in range(PROBES)))
        creating = asyncio.gather(*(create(n) for n in range(MUTATIONS)))
        probed, created = await asyncio.gather(probing, creating)
        after = await http.get("/readyz")
    for probe in [*probed, after]:
        assert probe.status_code == 503 and probe.json()["checks"]["database"] == "error: timeout", probe.text
    # every mutation answered its result, and the rows are exactly those answered
    listed = [e["node"] for e in (await api.execute(TASKS, token=token))["tasks"]["edges"]]
    assert sorted(t["id"] for t in listed) == sorted(created)
    assert len(set(created)) == MUTATIONS
    assert "database unreachable" not in slow_probe_api.log()

"""The short fuzz run `make test` includes: every query and mutation, generated arguments, a real server.

The longer run is `python -m bench.fuzz_api`.

Each fuzz runs on the test's own thread, blocking its event loop (the server under test is another
process), so a run that overstays the test's timeout is stopped by it. In a helper thread it would go on
beside pytest's failure report, and Python 3.11 cannot parse source in two threads at once (its AST
constructor keeps one recursion counter per interpreter: "SystemError: AST constructor recursion depth
mismatch", which pytest turns into an INTERNALERROR that ends the whole run).
"""

from __future__ import annotations

from harness.api_fuzz import fuzz_api, fuzz_bodies
from harness.proofloop import ApiClient, ServerProcess, create_open_task, partner_pair

EXAMPLES = 120
BODY_EXAMPLES = 80
# each fuzz sends its examples or stops after this long, well inside the test's timeout (pyproject.toml):
# an idle 2-core machine sends them all in a few seconds, a loaded one fewer
BUDGET_SECONDS = 45
# fewer than this many requests in the budget means the API (not the machine) is slow
LEAST_REQUESTS = 20


async def test_generated_documents_never_fail_inside(api: ApiClient, server: ServerProcess) -> None:
    owner_token, owner_id, _, partner_id = await partner_pair(api)
    task_id, instance_id = await create_open_task(api, owner_token, "GPS")
    partnerships = await api.execute("{ partnerships { id } }", token=owner_token)
    known = [owner_id, partner_id, task_id, instance_id, *(p["id"] for p in partnerships["partnerships"])]
    report = fuzz_api(server.url, owner_token, known, examples=EXAMPLES, budget_seconds=BUDGET_SECONDS)
    print(report.requests, report.codes, f"slowest {report.slowest_seconds:.2f} s")
    assert report.requests >= LEAST_REQUESTS, report


async def test_hostile_bodies_get_their_contract(api: ApiClient, server: ServerProcess) -> None:
    token, _ = await api.register()
    report = fuzz_bodies(server.url, token, examples=BODY_EXAMPLES, budget_seconds=BUDGET_SECONDS)
    print(report.requests, report.codes, f"slowest {report.slowest_seconds:.2f} s")
    assert report.requests >= LEAST_REQUESTS, report

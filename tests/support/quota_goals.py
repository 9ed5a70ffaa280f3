"""Quota goals: the documents and a quota task to check in against."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from harness.proofloop import task_rules

CREATE = """mutation($input: CreateTaskInput!) { createTask(input: $input) {
  id schedule { startsAt rrule timezone windowSeconds graceSeconds }
  quota { count period weekStartsOn minGapSeconds }
  currentInstance { id status opensAt dueAt closesAt proofsCounted proofsRequired } } }"""


CHECK_IN = """mutation($id: ID!) { checkIn(instanceId: $id, location: {latitude: 52.52, longitude: 13.405},
  accuracyMeters: 10) { status reason } }"""


INSTANCE = """query($id: ID!) { instance(id: $id) { status proofsCounted proofsRequired
  verifications { status reason } } }"""


TASK = """query($id: ID!) { task(id: $id) { currentInstance { id status opensAt dueAt proofsCounted } } }"""


def quota_task(method: str, quota: dict[str, Any], **rules: Any) -> dict[str, Any]:
    """A quota goal starting now; without a gap of its own it takes none (a test proves in seconds what
    takes days: the default gap is tested by itself)."""
    quota = {"minGapSeconds": 0, **quota}
    return {
        "title": "Gym",
        "method": method,
        "schedule": {
            "startsAt": datetime.now(UTC).isoformat(),
            "timezone": "Europe/Berlin",
            "graceSeconds": 0,
        },
        "quota": quota,
        **task_rules(method),
        **rules,
    }

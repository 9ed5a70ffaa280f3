"""Report an activity to a Proofloop INTEGRATION task: the connector a CI job, a cron entry or a phone
shortcut (through a tiny relay) calls when the thing it proves has happened. Standard library only.

    python examples/send_activity.py --url '<endpointUrl>' --secret='<secret>' \\
        --type run --duration 1800 --distance 5200

`endpointUrl` and `secret` are what `connectIntegration(taskId:)` answered (pass the secret as
`--secret=...`: one secret in 64 starts with "-", which a separate argument would read as an option).
Each call sends one event: {"id", "occurredAt", "type", "durationSeconds", "distanceMeters", "source"},
signed with X-Proofloop-Timestamp and
X-Proofloop-Signature: sha256=HMAC-SHA256(secret, "<timestamp>." + body).
--id defaults to a new one; pass your own (a workout's id, a CI run's id) so a retried call is recognized
as the same event (HTTP 409 with the proof it made) rather than proving twice. --occurred-at defaults to
now (the activity just ended). A network failure or a 5xx is retried with the same id and a fresh
signature. Exit status: 0 when the event was recorded (accepted or not: the answer says), 1 otherwise.

In a CI job, after the step that must pass:

    python send_activity.py --url "$PROOFLOOP_ENDPOINT" --secret="$PROOFLOOP_SECRET" \\
        --type build --id "$CI_PIPELINE_ID" --source ci
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import sys
import time
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime
from typing import Any

RETRIES = 3


def signed_headers(secret: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/json",
        "X-Proofloop-Timestamp": ts,
        "X-Proofloop-Signature": f"sha256={digest}",
    }


def event_of(args: argparse.Namespace) -> dict[str, Any]:
    event: dict[str, Any] = {
        "id": args.id or f"{args.source}-{uuid.uuid4().hex}",
        "occurredAt": args.occurred_at or datetime.now(UTC).isoformat(timespec="seconds"),
        "source": args.source,
    }
    if args.type:
        event["type"] = args.type
    if args.duration is not None:
        event["durationSeconds"] = args.duration
    if args.distance is not None:
        event["distanceMeters"] = args.distance
    return event


def send(url: str, secret: str, event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST the event (signed afresh on each try); (HTTP status, answer)."""
    body = json.dumps(event).encode()
    for attempt in range(RETRIES):
        request = urllib.request.Request(url, data=body, headers=signed_headers(secret, body), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as refused:
            if refused.code < 500 or attempt == RETRIES - 1:
                return refused.code, json.loads(refused.read() or b"{}")
        except OSError:
            if attempt == RETRIES - 1:
                raise
        time.sleep(2**attempt)
    raise AssertionError("unreachable")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the task's endpointUrl")
    parser.add_argument("--secret", required=True, help="the task's integration secret")
    parser.add_argument("--id", help="the event's id in your system (default: a new one)")
    parser.add_argument("--type", help="the activity's type, e.g. run, ride, build, meditation")
    parser.add_argument("--duration", type=float, help="how long it lasted, in seconds")
    parser.add_argument("--distance", type=float, help="how far it went, in meters")
    parser.add_argument("--occurred-at", help="when it ended, ISO 8601 with an offset (default: now)")
    parser.add_argument("--source", default="send_activity", help="your connector's name")
    args = parser.parse_args()

    status, answer = send(args.url, args.secret, event_of(args))
    if status == 200:
        proof = answer["data"]["verification"]
        print(f"{proof['status']} {proof['reason'] or ''} verification {proof['id']}".strip())
        return 0
    error = (answer.get("errors") or [{}])[0]
    code = error.get("extensions", {}).get("code", status)
    if status == 409 and "verificationId" in error.get("extensions", {}):
        print(f"already recorded as verification {error['extensions']['verificationId']}")
        return 0
    print(f"refused ({code}): {error.get('message', '')}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

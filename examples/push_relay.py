"""A minimal push gateway for Proofloop's webhooks: checks each delivery, drops repeats, and forwards one
notification per recipient device to a push service.

    python examples/push_relay.py --port 8787 --secret '<the webhook secret>' \\
        --devices devices.json --push-url https://push.example/send

`devices.json` maps a recipient's User id to its device tokens: {"<User id>": ["<token>", ...]}. Register
the relay as a webhook of each user it serves (under `make run`, http:// on localhost is allowed):

    mutation { webhookRegister(input: {url: "http://127.0.0.1:8787/", secret: "<secret>",
        eventTypes: [DUE_SOON, REVIEW_REQUESTED, APPEAL_REQUESTED, MISSED, VERIFIED]}) {
      webhook { id } userErrors { message } } }

Each notification is POSTed to --push-url as JSON {"to", "title", "body", "data"}; adapt `forward` to your
push service's API (FCM, APNs, a vendor's). Without --push-url it prints them. A delivery that cannot be
forwarded answers 502, so Proofloop retries it; one already forwarded answers 204 again.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import sys
import time
import urllib.request
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Lock
from typing import Any

MAX_BODY = 64 * 1024
TIMESTAMP_TOLERANCE_SECONDS = 300  # a captured delivery replayed later than this is refused
REMEMBERED_DELIVERIES = 10_000

TITLES = {
    "DUE_SOON": "{task} is due soon",
    "REVIEW_REQUESTED": "{user} asks you to review {task}",
    "APPEAL_REQUESTED": "{user} appeals {task}",
    "MISSED": "{user} missed {task}",
    "VERIFIED": "{user} did {task}",
    "REJECTED": "{user}'s {task} was rejected",
    "PING": "Proofloop test notification",
}


def signature_ok(secret: str, timestamp: str, body: bytes, given: str) -> bool:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    expected = "sha256=" + digest
    return hmac.compare_digest(expected, given)


def notification(payload: dict[str, Any]) -> tuple[str, str]:
    task = payload.get("task", {}).get("title", "a task")
    user = payload.get("user", {}).get("displayName", "")
    title = TITLES.get(payload["type"], payload["type"]).format(task=task, user=user or "You")
    instance = payload.get("instance", {})
    due = instance.get("dueAt", "")
    body = f"due {due}" if due else ""
    if "proofsRequired" in instance:  # a quota goal's period: how far it has come
        body = f"{instance['proofsCounted']} of {instance['proofsRequired']} done" + (
            f", {body}" if body else ""
        )
    return title, body


class Relay:
    def __init__(self, secret: str, devices: dict[str, list[str]], push_url: str | None) -> None:
        self.secret, self.devices, self.push_url = secret, devices, push_url
        self.seen: OrderedDict[str, None] = OrderedDict()
        self.lock = Lock()

    def handle(self, headers: dict[str, str], body: bytes) -> int:
        """The HTTP status to answer with."""
        timestamp, given = headers.get("x-proofloop-timestamp", ""), headers.get("x-proofloop-signature", "")
        if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > TIMESTAMP_TOLERANCE_SECONDS:
            return 401
        if not signature_ok(self.secret, timestamp, body, given):
            return 401
        payload = json.loads(body)
        delivery = str(payload["deliveryId"])
        with self.lock:
            if delivery in self.seen:
                return 204  # a retry or a redelivery of what was forwarded already
        title, text = notification(payload)
        recipient = payload["recipient"]["id"]
        try:
            for token in self.devices.get(recipient, []):
                self.forward({"to": token, "title": title, "body": text, "data": payload})
        except OSError as exc:
            print(f"push failed, Proofloop will retry: {exc}", file=sys.stderr)
            return 502
        with self.lock:
            self.seen[delivery] = None
            while len(self.seen) > REMEMBERED_DELIVERIES:
                self.seen.popitem(last=False)
        return 204

    def forward(self, message: dict[str, Any]) -> None:
        if self.push_url is None:
            print(json.dumps(message), flush=True)
            return
        request = urllib.request.Request(
            self.push_url, json.dumps(message).encode(), {"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            answer.read()


def serve(relay: Relay, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            if length > MAX_BODY:
                self.send_response(413)
            else:
                headers = {k.lower(): v for k, v in self.headers.items()}
                self.send_response(relay.handle(headers, self.rfile.read(length)))
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    return ThreadingHTTPServer((host, port), Handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8787)
    parser.add_argument("--secret", required=True, help="the webhook's secret, as registerWebhook showed it")
    parser.add_argument("--devices", type=Path, help="JSON: User id -> device tokens")
    parser.add_argument("--push-url", help="where notifications are POSTed (default: printed)")
    args = parser.parse_args(argv)
    devices = json.loads(args.devices.read_text()) if args.devices else {}
    server = serve(Relay(args.secret, devices, args.push_url), args.host, args.port)
    print(f"push relay listening on http://{args.host}:{args.port}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

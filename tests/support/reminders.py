"""What the reminder tests share: documents, a task whose reminders fire within seconds, a webhook
receiver on this machine, and reading the DUE_SOON events of a task."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.proofloop import ApiClient, free_port

CREATE = """mutation($input: CreateTaskInput!) {
  createTask(input: $input) { id reminders { before offsetSeconds } currentInstance { id opensAt dueAt } }
}"""
UPDATE = "mutation($id: ID!, $input: UpdateTaskInput!) { updateTask(id: $id, input: $input) { id } }"
PAUSE = "mutation($id: ID!) { pauseTask(id: $id) { id } }"
EVENTS = """query($task: ID, $after: ID) {
  events(taskId: $task, after: $after, first: 100) { id type occurredAt instance { id opensAt dueAt } }
}"""
REGISTER_WEBHOOK = """mutation($url: String!, $secret: String) {
  registerWebhook(input: { url: $url, secret: $secret }) { secret webhook { id url } }
}"""
DELETE_WEBHOOK = "mutation($id: ID!) { deleteWebhook(id: $id) }"


def every(seconds: int, *, window: int, starts_in: int, grace: int = 0) -> dict[str, Any]:
    """A schedule due every `seconds`, the first one `starts_in` seconds from now."""
    starts = (datetime.now(UTC) + timedelta(seconds=starts_in)).replace(microsecond=0)
    return {
        "startsAt": starts.isoformat(),
        "rrule": f"FREQ=SECONDLY;INTERVAL={seconds}",
        "timezone": "UTC",
        "windowSeconds": window,
        "graceSeconds": grace,
    }


def one_off(*, window: int, starts_in: int) -> dict[str, Any]:
    starts = (datetime.now(UTC) + timedelta(seconds=starts_in)).replace(microsecond=0)
    return {"startsAt": starts.isoformat(), "timezone": "UTC", "windowSeconds": window, "graceSeconds": 0}


async def create_task(
    api: ApiClient, token: str, schedule: dict[str, Any], reminders: list[dict[str, Any]], title: str = "Run"
) -> dict[str, Any]:
    task_input = {"title": title, "method": "PHOTO", "schedule": schedule, "reminders": reminders}
    task: dict[str, Any] = (await api.execute(CREATE, {"input": task_input}, token=token))["createTask"]
    return task


async def events_of(api: ApiClient, token: str, task_id: str | None = None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = (await api.execute(EVENTS, {"task": task_id}, token=token))["events"]
    return events


async def wait_for_events(
    api: ApiClient, token: str, task_id: str, kind: str, count: int, within: float = 30
) -> list[dict[str, Any]]:
    """The task's first `count` events of type `kind` (waits for them: they come from the worker)."""
    deadline = time.monotonic() + within
    while True:
        found = [e for e in await events_of(api, token, task_id) if e["type"] == kind]
        if len(found) >= count or time.monotonic() > deadline:
            assert len(found) >= count, f"{len(found)} {kind} events of {count} within {within} s"
            return found
        await asyncio.sleep(0.3)


def due_soon_per_instance(events: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in events:
        if event["type"] == "DUE_SOON":
            counts[event["instance"]["id"]] = counts.get(event["instance"]["id"], 0) + 1
    return counts


class Receiver:
    """An HTTP webhook receiver on 127.0.0.1 that records each request (tests only: plain http)."""

    def __init__(self, status: int = 204) -> None:
        self.status = status
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/hooks/proofloop"
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)

    async def wait_for(self, count: int, within: float = 30) -> list[tuple[dict[str, str], bytes]]:
        deadline = time.monotonic() + within
        while True:
            if len(self.requests) >= count or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        assert len(self.requests) >= count, f"{len(self.requests)} webhook requests of {count}"
        return self.requests


@contextmanager
def receiving(status: int = 204) -> Iterator[Receiver]:
    receiver = Receiver(status)
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()


def verify_signature(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """What a receiver does: recompute the HMAC over timestamp + "." + body and compare in constant time."""
    timestamp = headers["x-proofloop-timestamp"]
    expected = (
        "sha256=" + hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    )
    return hmac.compare_digest(expected, headers["x-proofloop-signature"])


def metric_value(text: str, name: str, **labels: str) -> float:
    """A counter's value in a Prometheus text page (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    total = 0.0
    for line in text.splitlines():
        if line.startswith(f"{name}{{") or line.startswith(f"{name} "):
            series, value = line.rsplit(" ", 1)
            got = series[series.find("{") + 1 : series.rfind("}")] if "{" in series else ""
            if ",".join(sorted(got.split(","))) == wanted:
                total += float(value)
    return total

"""`proofloop demo`: two users, a partnership and one short task per method, producing live events.

Against a running API (`make run`, then `make demo` in another terminal): registers Alice and Bob, makes
Bob Alice's accountability partner (Bob confirms his address with the link `make run` wrote under
var/mail/), creates a GPS, a PHOTO, a VIDEO, a PARTNER, an INTEGRATION and an avoid-a-place task due
every minute and a quota goal (3 gym check-ins a week, VERIFIED on the third), each with reminders ("at
open" and "10 s before due": DUE_SOON events in Alice's own feed), plans a week's break of the video
task a week ahead, and a one-off walk due in a few seconds that is MISSED, appealed by Alice and upheld
by Bob; prints both tokens and what to paste into GraphiQL, then keeps proving (check-ins inside and
outside the geofence, fresh photos with their capture time, partner reviews, runs that Alice's watch
reports as signed integration events, location samples near the casino she avoids) and lets some
instances be MISSED, until Ctrl-C or --duration. Bob's phone is a webhook receiver on this machine: each
notification it gets while "the app is closed" (a review asked of him, an appeal, Alice's misses and
verifications) is printed as it arrives, signature checked.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import random
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from PIL import Image, ImageDraw

PASSWORD = "demo password 1234"
GYM = {"latitude": 52.5200, "longitude": 13.4050}
DOWN_THE_ROAD = {"latitude": 52.5236, "longitude": 13.4050}  # ~400 m north: outside the 100 m geofence
TICK_SECONDS = 2.0
SUBSCRIPTION = (
    "subscription { verificationEvents { id type taskTitle instanceStatus occurredAt user { displayName } } }"
)

REFUSED = "userErrors { field code message }"  # every mutation's payload: what refused it, if anything
REGISTER = f"""mutation($e: String!, $p: String!, $n: String!) {{
  accountRegister(input: {{email: $e, password: $p, displayName: $n}}) {{
    token user {{ id }} {REFUSED} }} }}"""
INVITE = f"""mutation($e: String!) {{
  partnershipInvite(input: {{email: $e}}) {{ partnership {{ id }} {REFUSED} }} }}"""
ACCEPT = f"""mutation($id: ID!) {{
  partnershipRespond(input: {{partnershipId: $id, accept: true}}) {{
    partnership {{ status }} {REFUSED} }} }}"""
VERIFY = f"mutation($t: String!) {{ emailVerify(input: {{token: $t}}) {{ user {{ id }} {REFUSED} }} }}"
MAIL_WAIT_SECONDS = 30
_TOKEN = re.compile(r"verify-email\?token=([A-Za-z0-9_\-]+)")
CREATE_TASK = f"""mutation($input: TaskCreateInput!) {{
  taskCreate(input: $input) {{ task {{ id title method }} {REFUSED} }} }}"""
CURRENT = "query($id: ID!) { task(id: $id) { currentInstance { id isOpen } } }"
VERDICT = "id status reason"
CHECK_IN = f"""mutation($i: ID!, $at: GeoPointInput!) {{
  proofCheckIn(input: {{instanceId: $i, location: $at, accuracyMeters: 10}}) {{
    verification {{ {VERDICT} distanceMeters }} {REFUSED} }} }}"""
SUBMIT_PHOTO = f"""mutation($input: ProofPhotoSubmitInput!) {{
  proofPhotoSubmit(input: $input) {{ verification {{ {VERDICT} }} {REFUSED} }} }}"""
REQUEST_REVIEW = f"""mutation($i: ID!) {{
  reviewRequest(input: {{instanceId: $i, note: "done, honestly"}}) {{
    verification {{ {VERDICT} }} {REFUSED} }} }}"""
REVIEW = f"""mutation($v: ID!, $ok: Boolean!) {{
  reviewDecide(input: {{verificationId: $v, approve: $ok}}) {{ verification {{ {VERDICT} }} {REFUSED} }} }}"""
APPEAL = f"""mutation($i: ID!) {{
  appealCreate(input: {{instanceId: $i, note: "my phone died at the door"}}) {{
    verification {{ {VERDICT} }} {REFUSED} }} }}"""
LATEST = "query($id: ID!) { task(id: $id) { instances(first: 1) { edges { node { id status } } } } }"
# Alice's own nudges: when a window opens, and 10 s before each due time
REMINDERS = [{"before": "OPENS", "offsetSeconds": 0}, {"before": "DUE", "offsetSeconds": 10}]
APPEALED_WALK = "Evening walk"
REGISTER_WEBHOOK = f"""mutation($url: String!, $secret: String!, $types: [EventType!]) {{
  webhookRegister(input: {{url: $url, secret: $secret, eventTypes: $types}}) {{
    webhook {{ id }} {REFUSED} }} }}"""
EXIF_IFD, DATETIME_ORIGINAL, OFFSET_ORIGINAL = 0x8769, 0x9003, 0x9011
CASINO = {"latitude": 52.5300, "longitude": 13.4200}
REPORT = f"""mutation($i: ID!, $s: [LocationSampleInput!]!) {{
  proofLocationsReport(input: {{instanceId: $i, samples: $s}}) {{ report {{ accepted }} {REFUSED} }} }}"""
BREAK = f"""mutation($in: TaskBreakScheduleInput!) {{
  taskBreakSchedule(input: $in) {{ breaks {{ startsOn endsOn }} {REFUSED} }} }}"""
CONNECT = f"""mutation($id: ID!) {{
  integrationConnect(input: {{taskId: $id}}) {{ connection {{ endpointUrl secret }} {REFUSED} }} }}"""
RUN = {"activityTypes": ["run"], "minDurationSeconds": 600}
# what a partner's phone is told while the app is closed
PARTNER_NOTIFICATIONS = ["REVIEW_REQUESTED", "APPEAL_REQUESTED", "MISSED", "VERIFIED"]


class DemoError(Exception):
    pass


@dataclass
class Account:
    name: str
    email: str
    token: str
    id: str


@dataclass
class DemoTask:
    id: str
    title: str
    method: str
    handled: set[str] = field(default_factory=set)  # instance ids already proven (or left to be missed)
    integration: tuple[str, str] | None = None  # INTEGRATION: (endpointUrl, secret)


class Api:
    def __init__(self, url: str, http: httpx.Client) -> None:
        self.endpoint = f"{url.rstrip('/')}/graphql"
        self.http = http

    def run(self, document: str, variables: dict[str, Any] | None = None, token: str | None = None) -> Any:
        body = {"query": document, "variables": variables or {}}
        return self._result(self.http.post(self.endpoint, json=body, headers=_auth(token)))

    def mutate(self, document: str, variables: dict[str, Any] | None = None, token: str | None = None) -> Any:
        """The payload of a document's one mutation; DemoError with its first user error, if refused."""
        (payload,) = self.run(document, variables, token).values()
        return _done(payload)

    def upload(self, document: str, input: dict[str, Any], name: str, data: bytes, token: str) -> Any:
        """A GraphQL multipart request: the file goes in variables.input.<name>; the mutation's payload."""
        files: dict[str, tuple[str | None, bytes | str] | tuple[str | None, bytes | str, str]] = {
            "operations": (
                None,
                json.dumps({"query": document, "variables": {"input": {**input, name: None}}}),
            ),
            "map": (None, json.dumps({"0": [f"variables.input.{name}"]})),
            "0": (f"{name}.jpg", data, "image/jpeg"),
        }
        (payload,) = self._result(self.http.post(self.endpoint, files=files, headers=_auth(token))).values()
        return _done(payload)

    @staticmethod
    def _result(response: httpx.Response) -> Any:
        payload = response.json()
        if payload.get("errors"):
            raise DemoError(payload["errors"][0].get("message", payload["errors"]))
        return payload["data"]


def _done(payload: dict[str, Any]) -> Any:
    if payload["userErrors"]:
        raise DemoError(payload["userErrors"][0]["message"])
    return payload


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def register(api: Api, name: str) -> Account:
    email = f"demo-{name.lower()}-{uuid.uuid4().hex[:8]}@example.com"
    data = api.mutate(REGISTER, {"e": email, "p": PASSWORD, "n": name})
    return Account(name, email, data["token"], data["user"]["id"])


VerificationToken = Callable[[str], str]  # the token mailed to an address


def token_from_mail_dir(mail_dir: Path) -> VerificationToken:
    """Read a verification token from the .eml files the embedded default writes (no SMTP configured)."""

    def find(email: str) -> str:
        deadline = time.monotonic() + MAIL_WAIT_SECONDS
        while time.monotonic() < deadline:
            for path in sorted(mail_dir.glob("*.eml"), reverse=True):
                mail = message_from_bytes(path.read_bytes(), policy=policy.default)
                body = mail.get_body(preferencelist=("plain",)) if isinstance(mail, EmailMessage) else None
                found = _TOKEN.search(str(body.get_content()) if body is not None else "")
                if str(mail["To"]).lower() == email and found:
                    return found.group(1)
            time.sleep(0.2)
        raise DemoError(f"no verification mail to {email} in {mail_dir} (is a worker running?)")

    return find


def partner_up(api: Api, owner: Account, partner: Account, mailed_token: VerificationToken) -> None:
    partnership = api.mutate(INVITE, {"e": partner.email}, owner.token)["partnership"]
    api.mutate(VERIFY, {"t": mailed_token(partner.email)})  # only a verified address may accept
    api.mutate(ACCEPT, {"id": partnership["id"]}, partner.token)


class Phone:
    """A partner's phone, as a webhook receiver on 127.0.0.1: prints each signed notification it gets."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.secret = uuid.uuid4().hex
        self.received: list[dict[str, Any]] = []
        phone = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                signed = phone.signed(self.headers.get("X-Proofloop-Timestamp", ""), body)
                self.send_response(204 if signed == self.headers.get("X-Proofloop-Signature") else 401)
                self.end_headers()
                if signed == self.headers.get("X-Proofloop-Signature"):
                    phone.show(json.loads(body))

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/notify"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def signed(self, timestamp: str, body: bytes) -> str:
        digest = hmac.new(self.secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        return f"sha256={digest}"

    def show(self, payload: dict[str, Any]) -> None:
        self.received.append(payload)
        what = f"{payload['user']['displayName']}: {payload['type']} {payload['task']['title']}"
        print(f"{datetime.now():%H:%M:%S}  {self.owner}'s phone (webhook)  {what}", flush=True)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def connect_phone(api: Api, partner: Account) -> Phone | None:
    """Bob's webhook for what he may read of Alice's; None where this API refuses local receivers."""
    phone = Phone(partner.name)
    variables = {"url": phone.url, "secret": phone.secret, "types": PARTNER_NOTIFICATIONS}
    try:
        api.mutate(REGISTER_WEBHOOK, variables, partner.token)
    except DemoError as exc:  # production address rules: http:// to this machine is `make run`'s alone
        print(f"({partner.name}'s phone is not connected: {exc})", flush=True)
        phone.close()
        return None
    return phone


def every_minute() -> dict[str, Any]:
    # the first occurrence 30 s away: its 50 s window is already open
    starts_at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=30)
    return {
        "startsAt": starts_at.isoformat(),
        "rrule": "FREQ=MINUTELY",
        "timezone": "UTC",
        "windowSeconds": 50,
        "graceSeconds": 5,
    }


def this_week() -> dict[str, Any]:
    # a quota goal's periods are its schedule: the week that runs now, in Berlin, Monday to Monday
    return {"startsAt": datetime.now(UTC).isoformat(), "timezone": "Europe/Berlin", "graceSeconds": 0}


def create_tasks(api: Api, owner: Account) -> list[DemoTask]:
    inputs: list[dict[str, Any]] = [
        {"title": "Gym check-in", "method": "GPS", "gps": {"center": GYM, "radiusMeters": 100}},
        {"title": "Breakfast photo", "method": "PHOTO"},
        {"title": "Stretching video", "method": "VIDEO", "video": {"minDurationSeconds": 2}},
        {
            "title": "Read 20 pages",
            "method": "PARTNER",
            "partnerReview": {"reviewWindowSeconds": 30, "onTimeout": "REJECT"},
        },
        {"title": "Morning run", "method": "INTEGRATION", "integration": RUN},
        {  # a quota goal: one instance for the whole week, VERIFIED on its third check-in
            "title": "Gym 3x a week",
            "method": "GPS",
            "gps": {"center": GYM, "radiusMeters": 100},
            # the demo runs a week's visits in seconds: no gap between them (left out, it is 10 minutes)
            "quota": {"count": 3, "period": "WEEK", "minGapSeconds": 0},
        },
        {
            "title": "No casino",
            "method": "GPS",
            "gps": {"center": CASINO, "radiusMeters": 200, "avoid": True, "maxSampleGapSeconds": 60},
        },
    ]
    tasks = []
    for task_input in inputs:
        schedule = this_week() if "quota" in task_input else every_minute()
        task_input = {**task_input, "schedule": schedule, "reminders": REMINDERS}
        created = api.mutate(CREATE_TASK, {"input": task_input}, owner.token)["task"]
        task = DemoTask(created["id"], task_input["title"], task_input["method"])
        if task.method == "INTEGRATION":  # Alice's watch gets the run's endpoint and secret
            connection = api.mutate(CONNECT, {"id": task.id}, owner.token)["connection"]
            task.integration = (connection["endpointUrl"], connection["secret"])
        tasks.append(task)
    # a week off the stretching, starting in a week: it shows on the task, its days are not due
    stretching = next(t for t in tasks if t.method == "VIDEO")
    week = (datetime.now(UTC) + timedelta(days=7)).date()
    off = {
        "taskId": stretching.id,
        "startsOn": week.isoformat(),
        "endsOn": (week + timedelta(days=6)).isoformat(),
    }
    api.mutate(BREAK, {"in": off}, owner.token)
    return tasks


def watch_reports_run(api: Api, task: DemoTask, minutes: int) -> dict[str, Any]:
    """Alice's watch, as an integration: a run of `minutes` that just ended, signed with the task's secret."""
    assert task.integration is not None
    url, secret = task.integration
    event = {
        "id": f"watch-{uuid.uuid4().hex[:12]}",
        "occurredAt": datetime.now(UTC).isoformat(timespec="seconds"),
        "type": "run",
        "durationSeconds": minutes * 60,
        "source": "watch",
    }
    body = json.dumps(event).encode()
    timestamp = str(int(time.time()))
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/json",
        "X-Proofloop-Timestamp": timestamp,
        "X-Proofloop-Signature": f"sha256={digest}",
    }
    answer = api.http.post(url, content=body, headers=headers)
    if answer.status_code != 200:
        raise DemoError(f"the integration event was refused: {answer.text}")
    verification: dict[str, Any] = answer.json()["data"]["verification"]
    return verification


def create_walk(api: Api, owner: Account) -> DemoTask:
    """A one-off due in two seconds that nobody proves: the chain settles it MISSED, then it is appealed."""
    starts_at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
    schedule = {"startsAt": starts_at.isoformat(), "timezone": "UTC", "windowSeconds": 2, "graceSeconds": 0}
    task_input = {"title": APPEALED_WALK, "method": "PHOTO", "schedule": schedule}
    created = api.mutate(CREATE_TASK, {"input": task_input}, owner.token)["task"]
    return DemoTask(created["id"], APPEALED_WALK, "PHOTO")


def appeal_when_missed(api: Api, walk: DemoTask, alice: Account, bob: Account) -> None:
    """Once the walk is MISSED, Alice appeals and Bob upholds it: the instance turns VERIFIED."""
    edges = api.run(LATEST, {"id": walk.id}, alice.token)["task"]["instances"]["edges"]
    if not edges or edges[0]["node"]["status"] != "MISSED" or walk.handled:
        return
    instance_id = edges[0]["node"]["id"]
    walk.handled.add(instance_id)
    appealed = api.mutate(APPEAL, {"i": instance_id}, alice.token)["verification"]
    decided = api.mutate(REVIEW, {"v": appealed["id"], "ok": True}, bob.token)["verification"]
    line = f"MISSED; appealed, {bob.name} upholds: {_verdict(decided)}"
    print(f"{datetime.now():%H:%M:%S}  {walk.title:<17} {line}", flush=True)


def fresh_photo(rng: random.Random) -> bytes:
    """A new random scene each time: perceptually unlike the last, so never REUSED_MEDIA."""
    image = Image.new("RGB", (480, 360), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for _ in range(12):
        x, y = rng.randrange(-60, 480), rng.randrange(-60, 360)
        box = (x, y, x + rng.randrange(40, 240), y + rng.randrange(40, 180))
        colour = tuple(rng.randrange(256) for _ in range(3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=colour)
    exif = Image.Exif()
    taken = datetime.now(UTC)
    # a phone camera's tags: the capture time and its offset (the proof shows capturedAt from them)
    exif.get_ifd(EXIF_IFD).update(
        {DATETIME_ORIGINAL: taken.strftime("%Y:%m:%d %H:%M:%S"), OFFSET_ORIGINAL: "+00:00"}
    )
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=85, exif=exif)
    return out.getvalue()


def prove(
    api: Api, task: DemoTask, instance_id: str, alice: Account, bob: Account, rng: random.Random
) -> str:
    """One instance's story, rotating per task: prove it, prove it wrongly, or let the chain miss it."""
    turn = len(task.handled) % 3
    if task.method == "VIDEO" or turn == 2:
        return "left alone: the chain will settle it MISSED"
    if task.title == "No casino":
        where = DOWN_THE_ROAD if turn == 0 else CASINO  # her phone's location, sent in the background
        fix = {**where, "accuracyMeters": 15, "recordedAt": datetime.now(UTC).isoformat()}
        api.mutate(REPORT, {"i": instance_id, "s": [fix]}, alice.token)
        return f"location sample {'away from' if turn == 0 else 'inside'} the casino: judged at the due time"
    if task.title == "Gym 3x a week":
        at_gym = {"i": instance_id, "at": GYM}
        verdicts = [_verdict(api.mutate(CHECK_IN, at_gym, alice.token)["verification"]) for _ in range(3)]
        week = api.run(INSTANCE_PROGRESS, {"i": instance_id}, alice.token)["instance"]
        counted = f"{week['proofsCounted']} of 3, {week['status']}"
        return f"three gym check-ins this week ({', '.join(verdicts)}): {counted}"
    if task.method == "GPS":
        where = GYM if turn == 0 else DOWN_THE_ROAD
        result = api.mutate(CHECK_IN, {"i": instance_id, "at": where}, alice.token)["verification"]
        return f"check-in {result['distanceMeters']:.0f} m from the gym: {_verdict(result)}"
    if task.method == "PHOTO":
        result = api.upload(SUBMIT_PHOTO, {"instanceId": instance_id}, "photo", fresh_photo(rng), alice.token)
        return f"photo: {_verdict(result['verification'])}"
    if task.method == "INTEGRATION":
        minutes = 30 if turn == 0 else 4  # the rule asks for 10 minutes at least
        return (
            f"Alice's watch reports a {minutes}-minute run: {_verdict(watch_reports_run(api, task, minutes))}"
        )
    requested = api.mutate(REQUEST_REVIEW, {"i": instance_id}, alice.token)["verification"]
    approve = turn == 0
    decided = api.mutate(REVIEW, {"v": requested["id"], "ok": approve}, bob.token)["verification"]
    return f"review requested; {bob.name} {'approves' if approve else 'rejects'}: {_verdict(decided)}"


INSTANCE_PROGRESS = "query($i: ID!) { instance(id: $i) { status proofsCounted } }"


def _verdict(verification: dict[str, Any]) -> str:
    reason = verification.get("reason")
    return f"{verification['status']}{f' ({reason})' if reason else ''}"


def tick(api: Api, tasks: list[DemoTask], alice: Account, bob: Account, rng: random.Random) -> None:
    for task in tasks:
        instance = api.run(CURRENT, {"id": task.id}, alice.token)["task"]["currentInstance"]
        if instance is None or not instance["isOpen"] or instance["id"] in task.handled:
            continue
        line = prove(api, task, instance["id"], alice, bob, rng)
        task.handled.add(instance["id"])
        print(f"{datetime.now():%H:%M:%S}  {task.title:<17} {line}", flush=True)


def print_intro(url: str, alice: Account, bob: Account) -> None:
    graphiql = f"{url.rstrip('/')}/graphql?query={quote(SUBSCRIPTION)}"
    print(
        f"""
Demo users (password {PASSWORD!r}):
  {alice.name}: {alice.email}
    token: {alice.token}
  {bob.name} (Alice's partner): {bob.email}
    token: {bob.token}

Watch Alice's feed as Bob, in GraphiQL: {graphiql}
  Headers (the "Headers" tab):
    {json.dumps({"Authorization": f"Bearer {bob.token}"})}
  Subscription:
    {SUBSCRIPTION}

Tasks are due every minute; proofs follow as their windows open. Alice's reminders (DUE_SOON) reach
her own feed only; her missed "{APPEALED_WALK}" is appealed and Bob upholds it. Bob's phone (a webhook
on this machine) prints what he is told while his app is closed. Ctrl-C stops.
""",
        flush=True,
    )


def run_demo(url: str, duration: float, mailed_token: VerificationToken) -> int:
    """Run the demo against the API at `url` for `duration` seconds (0: until Ctrl-C); 0 when it went well."""
    rng = random.Random()
    phone: Phone | None = None
    with httpx.Client(timeout=30) as http:
        api = Api(url, http)
        try:
            alice, bob = register(api, "Alice"), register(api, "Bob")
            partner_up(api, alice, bob, mailed_token)
            phone = connect_phone(api, bob)
            tasks = create_tasks(api, alice)
            walk = create_walk(api, alice)
            print_intro(url, alice, bob)
            deadline = time.monotonic() + duration if duration > 0 else float("inf")
            while time.monotonic() < deadline:
                tick(api, tasks, alice, bob, rng)
                appeal_when_missed(api, walk, alice, bob)
                time.sleep(max(0.0, min(TICK_SECONDS, deadline - time.monotonic())))
        except KeyboardInterrupt:
            print("demo stopped", flush=True)
        except (DemoError, httpx.HTTPError) as exc:
            print(f"demo failed: {exc} (is the API running at {url}? `make run`)", flush=True)
            return 1
        finally:
            if phone is not None:
                phone.close()
    return 0

"""Test harness: real server and worker processes, and a gql client that speaks as a frontend would."""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import signal
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import asyncpg
import httpx
from gql import Client, GraphQLRequest
from gql.transport.aiohttp import AIOHTTPTransport
from gql.transport.exceptions import TransportQueryError

from harness.forks import START_SECONDS, Shared, Started
from harness.mailbox import Mailbox, mailed_token
from harness.ports import free_port as free_port
from settings import SQLITE_FILE

ROOT = Path(__file__).resolve().parent.parent

T = TypeVar("T")


# the secret of the servers tests/conftest.py starts: it enciphers event ids (services/kit/ids.py)
TEST_SECRET_KEY = "test-secret-key"


def event_id(position: int, secret: str = TEST_SECRET_KEY) -> str:
    """The id the API shows for the event at `position` (an outbox row a test wrote itself)."""
    from services.kit.ids import event_ids

    return event_ids(secret).encode(position)


def event_position(id: str, secret: str = TEST_SECRET_KEY) -> int:
    from services.kit.ids import event_ids

    position = event_ids(secret).decode(id)
    assert position is not None, f"{id!r} is not an event id of this server"
    return position


def row_key(global_id: object) -> str:
    """The row key inside a global id the API handed out (base64url of "<Type>:<key>"), for SQL; a bare
    key stays as it is."""
    import base64

    text = str(global_id)
    try:
        return str(uuid.UUID(text))
    except ValueError:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode().partition(":")[2]


# settings every command started through child_env gets unless its own environment sets them: empty, so a
# benchmark's processes run as production's do; the test run sets its own (tests/conftest.py)
_run_settings: dict[str, str] = {}


def use_run_settings(settings: dict[str, str]) -> None:
    """Give every command this process starts from now on these PROOFLOOP_* settings by default."""
    _run_settings.clear()
    _run_settings.update(settings)


def child_env(overrides: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFLOOP_")}
    env.update(_run_settings)
    env.update(overrides)
    env["PYTHONPATH"] = str(ROOT)
    return env


def long_form(short: int, long: int) -> int:
    """A sample size: `short` in `make test`, `long` with PROOFLOOP_TEST_LONG=1 (the long form of the tests
    that have one: more photos, more racing edits; the same checks on each)."""
    return long if os.environ.get("PROOFLOOP_TEST_LONG") == "1" else short


PG_ADMIN_URL = os.environ.get("PROOFLOOP_TEST_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres")


def pg_url(database: str) -> str:
    return PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{database}"


def _admin(sql: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(PG_ADMIN_URL)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    # on a thread of its own: a caller may be inside a running event loop (a session fixture first asked
    # for by an async fixture or test), where asyncio.run cannot start another; a plain thread, since the
    # template's DROP runs at exit, when executors take no more work
    failure: list[BaseException] = []

    def in_thread() -> None:
        try:
            asyncio.run(run())
        except BaseException as error:
            failure.append(error)

    thread = threading.Thread(target=in_thread, name="pg-admin")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


_migrated_template: str | None = None


def _template() -> str:
    """A database migrated once per process with the real migrations (`proofloop migrate`), dropped at exit:
    each migrated_database is a copy of it (CREATE DATABASE ... TEMPLATE takes a tenth of a second, a
    migration run seconds). Nothing ever connects to it after the migration, as copying requires."""
    global _migrated_template
    if _migrated_template is None:
        _migrated_template = _once("migrating the PostgreSQL template", _new_template)
    return _migrated_template


def _new_template() -> str:
    name = f"proofloop_template_{uuid.uuid4().hex[:10]}"
    _admin(f'CREATE DATABASE "{name}"')
    atexit.register(_admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    run_cli(["migrate"], {"PROOFLOOP_DATABASE_URL": pg_url(name)})
    return name


_failed_once: dict[str, BaseException] = {}


def _once(what: str, step: Callable[[], T]) -> T:
    """A step the process's tests share; once it has failed, every later call fails at once with the first
    failure as its cause instead of trying (and waiting) again."""
    if what in _failed_once:
        raise RuntimeError(f"{what} failed earlier in this test process") from _failed_once[what]
    try:
        return step()
    except Exception as failure:
        _failed_once[what] = failure
        raise


@contextmanager
def migrated_database(prefix: str) -> Iterator[str]:
    """A PostgreSQL database of its own, migrated with the real migrations, dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    _admin(f'CREATE DATABASE "{name}" TEMPLATE "{_template()}"')
    try:
        yield pg_url(name)
    finally:
        _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_migrated_sqlite: Path | None = None


def migrated_sqlite(data_dir: Path) -> Path:
    """The embedded default's SQLite file under `data_dir` (where `proofloop` looks for it when no
    PROOFLOOP_DATABASE_URL is set), migrated: a copy of one file this process migrated once with the real
    migrations (`proofloop migrate`), as migrated_database copies a PostgreSQL template. Copied with
    SQLite's backup, which carries whatever a write-ahead log still held."""
    global _migrated_sqlite
    if _migrated_sqlite is None:
        _migrated_sqlite = _once("migrating the SQLite template", _new_sqlite_template)
    target = data_dir / SQLITE_FILE
    data_dir.mkdir(parents=True, exist_ok=True)
    source, copy = sqlite3.connect(_migrated_sqlite), sqlite3.connect(target)
    try:
        source.backup(copy)
    finally:
        copy.close()
        source.close()
    return target


class CommandFailed(subprocess.CalledProcessError):
    """A command run_cli ran exited non-zero or ran out of time; its message carries what it printed (a
    CalledProcessError's own says only the exit code)."""

    def __str__(self) -> str:
        printed = "\n".join(part for part in (self.stdout, self.stderr) if part)
        return f"{super().__str__()}\n{printed or '(it printed nothing)'}"


def _new_sqlite_template() -> Path:
    template_dir = Path(tempfile.mkdtemp(prefix="proofloop-sqlite-template-"))
    atexit.register(shutil.rmtree, template_dir, ignore_errors=True)
    run_cli(["migrate"], {"PROOFLOOP_DATA_DIR": str(template_dir)})
    return template_dir / SQLITE_FILE


def run_cli(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m cli <args>` run to its end; CommandFailed, with the command's output, if it fails or takes
    longer than `timeout`. A command the fork server forks (`migrate`) writes its stdout and stderr to one
    log, which comes back as `stdout`."""
    command_env = child_env(env)
    command = ["proofloop", *args]
    with tempfile.TemporaryDirectory(prefix="proofloop-cli-") as logs:
        log_path = Path(logs) / f"{args[0]}.log"
        forked = _forks.fork(args, command_env, log_path) if _forks is not None else None
        if forked is not None:
            try:
                code = forked.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(forked.pid, signal.SIGKILL)
                code = forked.wait()
            output = log_path.read_text(errors="replace")
            if code != 0:
                raise CommandFailed(code, command, output=output)
            return subprocess.CompletedProcess(command, 0, stdout=output, stderr="")
    try:
        return subprocess.run(
            [sys.executable, "-m", "cli", *args],
            env=command_env,
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.CalledProcessError as failed:
        raise CommandFailed(failed.returncode, command, failed.stdout, failed.stderr) from None
    except subprocess.TimeoutExpired as late:
        printed = [
            p if isinstance(p, str) or p is None else p.decode(errors="replace")
            for p in (late.stdout, late.stderr)
        ]
        raise CommandFailed(-signal.SIGKILL, command, *printed) from None


# the test run forks `serve` and `worker` from a fork server of its process (tests/conftest.py installs
# one; harness/forks.py says why and when); benchmarks install none, so each process they start starts
# afresh, as in production
_forks: Shared | None = None


def fork_from(shared: Shared | None) -> None:
    global _forks
    _forks = shared


class _Process:
    def __init__(self, env: dict[str, str], log_name: str) -> None:
        self.env = env
        log_dir = Path(env.get("PROOFLOOP_DATA_DIR", "/tmp")) / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{log_name}-{uuid.uuid4().hex[:6]}.log"
        self.proc: Started | None = None

    def spawn(self, args: list[str]) -> None:
        command = args[3:] if args[1:3] == ["-m", "cli"] else []
        if _forks is not None and command:
            self.proc = _forks.fork(command, child_env(self.env), self.log_path)
            if self.proc is not None:
                return
        with open(self.log_path, "ab") as log:  # the child keeps its own copy of the descriptor
            self.proc = subprocess.Popen(
                args,
                env=child_env(self.env),
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        # SIGTERM to the command alone, which stops its children in order; SIGKILL to the whole group
        if sig == signal.SIGKILL:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def kill(self) -> None:
        """kill -9 of the whole process group, as a crash would."""
        self.stop(signal.SIGKILL)

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_answering(proc: Started, url: str, what: str, log: Callable[[], str]) -> None:
    """Until `url` answers (START_SECONDS at most); RuntimeError with the process's log if it exits or never
    does."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited:\n{log()}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not answer:\n{log()}")


class ServerProcess(_Process):
    """`proofloop serve` on `port`; with workers > 1, uvicorn's supervisor and that many API processes."""

    def __init__(self, env: dict[str, str], port: int, workers: int = 1, ready_path: str = "/readyz") -> None:
        super().__init__(env, f"api-{port}")
        self.port = port
        self.workers = workers
        self.url = f"http://127.0.0.1:{port}"
        self.ready_path = ready_path  # /healthz for a server whose readiness is made to fail

    def __enter__(self) -> ServerProcess:
        self.spawn(
            [sys.executable, "-m", "cli", "serve", "--port", str(self.port), "--workers", str(self.workers)]
        )
        assert self.proc is not None
        wait_answering(self.proc, f"{self.url}{self.ready_path}", "server", self.log)
        return self


class WorkerProcess(_Process):
    def __init__(self, env: dict[str, str], threads: int = 8, processes: int = 1) -> None:
        super().__init__(env, "worker")
        self.threads = threads
        self.processes = processes

    def __enter__(self) -> WorkerProcess:
        self.start()
        return self

    def start(self) -> None:
        env = dict(self.env)
        self.env = env
        self.spawn(
            [
                sys.executable,
                "-m",
                "cli",
                "worker",
                "--threads",
                str(self.threads),
                "--processes",
                str(self.processes),
            ]
        )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited:\n{self.log()}")
            if self.log().count("is ready for action") >= self.processes:
                return
            time.sleep(0.1)
        raise RuntimeError(f"worker did not start:\n{self.log()}")


# one TLS context for every client this process makes: the servers under test speak plain HTTP, and httpx
# would otherwise build a context (loading the CA bundle) for each client, 24 ms of CPU each
_LOCAL_TLS = ssl.create_default_context()


def local_http(**options: Any) -> httpx.AsyncClient:
    """An HTTP client for the servers this run starts (`options` as httpx.AsyncClient takes them)."""
    return httpx.AsyncClient(verify=_LOCAL_TLS, **options)


# how long a client waits for an answer before it calls the server hung: a guard, never a measure (the
# benchmarks measure); a 4K video's decode takes a second on an idle 2-core machine and many times that on
# a loaded one. PROOFLOOP_TEST_ANSWER_SECONDS moves it for a slower machine
ANSWER_SECONDS = float(os.environ.get("PROOFLOOP_TEST_ANSWER_SECONDS", "60"))


class GraphQLFailure(Exception):
    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(errors)
        self.errors = errors

    @property
    def code(self) -> str:
        return str(self.errors[0].get("extensions", {}).get("code"))

    @property
    def field(self) -> str | None:
        field = self.errors[0].get("extensions", {}).get("field")
        return str(field) if field is not None else None

    @property
    def message(self) -> str:
        return str(self.errors[0].get("message"))


def done(data: dict[str, Any], mutation: str) -> dict[str, Any]:
    """A payload mutation's payload, or GraphQLFailure with its userErrors (as the first shape raised them)."""
    payload: dict[str, Any] = data[mutation]
    refused = payload.get("userErrors") or []
    if refused:
        raise GraphQLFailure(
            [
                {
                    "message": e.get("message"),
                    "extensions": {"code": e.get("code"), "field": ".".join(e.get("field") or []) or None},
                }
                for e in refused
            ]
        )
    return payload


class ApiClient:
    """Runs GraphQL documents against the server over real HTTP with gql, as a given user."""

    def __init__(self, url: str, mailbox: Mailbox | None = None) -> None:
        self.url = url
        self.mailbox = mailbox

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    async def execute(
        self,
        document: str,
        variables: dict[str, Any] | None = None,
        *,
        token: str | None = None,
        upload_files: bool = False,
        headers: dict[str, str] | None = None,
        timeout: float = ANSWER_SECONDS,
        operation_name: str | None = None,
    ) -> dict[str, Any]:
        """The document's data (of its operation `operation_name`, when it holds several); GraphQLFailure
        with its errors. `timeout`: seconds to wait for the answer."""
        headers = {**(headers or {}), **({"Authorization": f"Bearer {token}"} if token else {})}
        transport = AIOHTTPTransport(url=f"{self.url}/graphql", headers=headers)
        client = Client(transport=transport, fetch_schema_from_transport=False, execute_timeout=timeout)
        async with client as session:
            request = GraphQLRequest(document, variable_values=variables, operation_name=operation_name)
            try:
                result: dict[str, Any] = await session.execute(request, upload_files=upload_files)
            except TransportQueryError as exc:
                raise GraphQLFailure(list(exc.errors or [])) from None
            return result

    async def register(self, name: str | None = None, timezone: str = "UTC") -> tuple[str, dict[str, Any]]:
        """A fresh account: (token, user)."""
        name = name or f"user-{uuid.uuid4().hex[:8]}"
        data = await self.execute(
            """mutation($e: String!, $p: String!, $n: String!, $tz: String) {
                 accountRegister(input: {email: $e, password: $p, displayName: $n, timezone: $tz}) {
                   token user { id email } userErrors { field code message }
                 }
               }""",
            {"e": f"{name}@example.com", "p": "correct horse battery", "n": name, "tz": timezone},
        )
        registered = done(data, "accountRegister")
        return registered["token"], registered["user"]

    async def verify_email(self, email: str) -> None:
        """Follow the verification link mailed to `email` (the worker delivers it to the test's mailbox)."""
        assert self.mailbox is not None, "this client has no mailbox to read the link from"
        mail = await self.mailbox.wait_for(email, "Confirm your email")
        verify = (
            "mutation($t: String!) { emailVerify(input: {token: $t}) { userErrors { field code message } } }"
        )
        done(await self.execute(verify, {"t": mailed_token(mail)}), "emailVerify")

    async def register_verified(self, name: str | None = None) -> tuple[str, dict[str, Any]]:
        token, user = await self.register(name)
        await self.verify_email(user["email"])
        return token, user


# Proofs, partners and reviews: tasks whose window is open now, partner pairs, and file uploads.

BERLIN = (52.52, 13.405)
TASK_WITH_INSTANCE = """mutation($input: TaskCreateInput!) {
  taskCreate(input: $input) {
    task { id currentInstance { id status dueAt opensAt closesAt } } userErrors { field code message }
  }
}"""


def open_schedule(starts_in_seconds: float = 30, window_seconds: int = 3600) -> dict[str, Any]:
    """A daily schedule whose first instance is open now (due shortly, window open, grace one minute)."""
    # whole seconds: recurrence works in seconds (a sub-second DTSTART would skip the first occurrence)
    starts = (datetime.now(UTC) + timedelta(seconds=starts_in_seconds)).replace(microsecond=0)
    return {
        "startsAt": starts.isoformat(),
        "rrule": "FREQ=DAILY",
        "timezone": "UTC",
        "windowSeconds": window_seconds,
        "graceSeconds": 60,
    }


def task_rules(method: str) -> dict[str, Any]:
    if method == "GPS":
        return {"gps": {"center": {"latitude": BERLIN[0], "longitude": BERLIN[1]}, "radiusMeters": 150}}
    if method == "VIDEO":
        return {"video": {"minDurationSeconds": 2}}
    if method == "PARTNER":
        return {"partnerReview": {"reviewWindowSeconds": 3600, "onTimeout": "REJECT"}}
    return {}


async def create_open_task(
    api: ApiClient, token: str, method: str, schedule: dict[str, Any] | None = None, **rules: Any
) -> tuple[str, str]:
    """A task of `method` whose current instance accepts proof now: (task id, instance id)."""
    task_input = {
        "title": f"{method.title()} task",
        "method": method,
        "schedule": schedule or open_schedule(),
    }
    task_input.update(task_rules(method))
    task_input.update(rules)
    task = done(await api.execute(TASK_WITH_INSTANCE, {"input": task_input}, token=token), "taskCreate")[
        "task"
    ]
    return task["id"], task["currentInstance"]["id"]


async def act_before_deadline(
    api: ApiClient,
    token: str,
    method: str,
    act: Callable[[str], Awaitable[T]],
    *,
    window_seconds: int = 600,
    **rules: Any,
) -> tuple[str, str, T]:
    """A task of `method` whose current instance falls due seconds from now (no grace) and what
    `act(instance id)` gave while that instance was still open: (task id, instance id, result).

    The lead starts at 2 s, so the worker settles the instance soon after; when `act` has not returned
    before the deadline (a loaded machine), it may have come too late, and another task is tried with
    twice the lead. The outcome never depends on the machine's speed, only how long it takes. A late
    try's task stays and is settled like any other: callers read only the instance returned."""
    lead = 2.0
    while True:
        schedule = {**open_schedule(starts_in_seconds=lead, window_seconds=window_seconds), "graceSeconds": 0}
        task_input = {"title": f"{method.title()} task", "method": method, "schedule": schedule}
        task_input.update(task_rules(method))
        task_input.update(rules)
        created = await api.execute(TASK_WITH_INSTANCE, {"input": task_input}, token=token)
        task = done(created, "taskCreate")["task"]
        instance = task["currentInstance"]
        closes = datetime.fromisoformat(instance["closesAt"])
        try:
            result = await act(instance["id"])
        except GraphQLFailure:
            if datetime.now(UTC) < closes:
                raise
        else:
            if datetime.now(UTC) < closes:
                return task["id"], instance["id"], result
        if lead >= 64:
            raise AssertionError(f"{method} instance: the action never came before a deadline {lead:g} s out")
        lead *= 2


async def partner_pair(api: ApiClient) -> tuple[str, str, str, str]:
    """An owner and an ACTIVE partner watching them: (owner token, owner id, partner token, partner id)."""
    owner_token, owner = await api.register()
    partner_token, partner = await api.register_verified()
    invite = await api.execute(
        """mutation($e: String!) {
             partnershipInvite(input: {email: $e}) { partnership { id } userErrors { field code message } }
           }""",
        {"e": partner["email"]},
        token=owner_token,
    )
    accept = await api.execute(
        """mutation($id: ID!) {
             partnershipRespond(input: {partnershipId: $id, accept: true}) { userErrors { field code message } }
           }""",
        {"id": done(invite, "partnershipInvite")["partnership"]["id"]},
        token=partner_token,
    )
    done(accept, "partnershipRespond")
    return owner_token, owner["id"], partner_token, partner["id"]


def file_var(data: bytes, filename: str = "proof.jpg", content_type: str = "application/octet-stream") -> Any:
    import io

    from gql import FileVar

    return FileVar(io.BytesIO(data), filename=filename, content_type=content_type)


async def upload(
    api: ApiClient, document: str, variables: dict[str, Any], *, token: str | None
) -> dict[str, Any]:
    """Run a document whose variables hold file_var(...) values as a GraphQL multipart request."""
    return await api.execute(document, variables, token=token, upload_files=True)

"""One chaos run: a private PostgreSQL database and redis-server, a real API and worker, a burst of
short-interval tasks created through the API, a live subscriber that resumes after every disconnect,
one injected fault, and the invariants checked afterwards. Shared by tests/chaos (short form) and
bench/chaos.py (long form, with figures).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

import asyncpg
from gql import Client, GraphQLRequest
from gql.transport.websockets import WebsocketsTransport

from harness.chain_support import short_schedule
from harness.ports import free_port
from harness.private_services import PrivatePostgres, PrivateRedis
from harness.proofloop import ApiClient, GraphQLFailure, ServerProcess, WorkerProcess, run_cli
from services.kit.ids import event_ids

FAULTS = ("none", "redis_restart", "redis_flushall", "pg_restart", "pg_pause", "worker_kill", "api_kill")
SUBSCRIBE = "subscription($after: ID) { verificationEvents(after: $after) { id } }"
CREATE = "mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }"
SETTLING = ("MISSED", "VERIFIED", "REJECTED")


T = TypeVar("T")


async def _retrying_unavailable(call: Callable[[], Awaitable[T]], attempts: int = 20) -> T:
    """As a client does: a request refused with SERVICE_UNAVAILABLE (the API has not yet seen the last
    fault's dependency come back) is sent again after the retryAfterSeconds it names."""
    for _ in range(attempts - 1):
        try:
            return await call()
        except GraphQLFailure as refused:
            if refused.code != "SERVICE_UNAVAILABLE":
                raise
            retry = refused.errors[0].get("extensions", {}).get("retryAfterSeconds", 1)
            await asyncio.sleep(float(retry))
    return await call()


@dataclass(frozen=True)
class Shape:
    """How big a run is: `tasks` tasks whose occurrences all fall due together every `every` seconds,
    the first `start_in` seconds after creation began; the fault comes `before` seconds after the first
    due instant and is watched for `after` seconds; `pause` is how long a PostgreSQL pause lasts."""

    tasks: int
    every: int
    start_in: float
    before: float
    after: float
    pause: float
    down: float = 0.0  # how long a PostgreSQL restart keeps it stopped (0: as fast as it restarts)


@dataclass
class Outcome:
    fault: str
    instances: int  # instances settled since the fault began that were due by the end of the watch
    worst_late_s: float
    links_per_instance: float
    dead_letters_kept: int
    dead_letters_dropped: float = 0.0  # counted by the worker since it started
    excused: int = 0  # occurrences recorded EXCUSED (SERVICE_OUTAGE) since the fault began
    problems: list[str] = field(default_factory=list)


SECRET_KEY = "chaos-secret-key"
# event ids are enciphered positions: the checks below compare them with the table's positions
EVENT_IDS = event_ids(SECRET_KEY)


class ResumingFeed:
    """A subscriber as a careful client is: on any disconnect it resubscribes `after` the last event."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url.replace("http://", "ws://") + "/graphql"
        self.token = token
        self.positions: list[int] = []
        self.last_id = "0"
        self.reconnects = 0

    async def run(self) -> None:
        while True:
            try:
                await self._follow()
            except asyncio.CancelledError:
                raise
            except Exception:
                self.reconnects += 1
                await asyncio.sleep(0.5)

    async def _follow(self) -> None:
        transport = WebsocketsTransport(
            url=self.url,
            subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
            init_payload={"Authorization": f"Bearer {self.token}"},
            connect_timeout=5,
        )
        client = Client(transport=transport, fetch_schema_from_transport=False)
        session = await client.connect_async()  # type: ignore[no-untyped-call]
        try:
            request = GraphQLRequest(SUBSCRIBE, variable_values={"after": self.last_id})
            async for result in session.subscribe(request):
                self.last_id = result["verificationEvents"]["id"]
                self.positions.append(EVENT_IDS.decode(self.last_id) or 0)
        finally:
            with contextlib.suppress(Exception):
                await client.close_async()  # type: ignore[no-untyped-call]


def http_status(url: str, timeout: float = 5) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


class ChaosRun:
    def __init__(self, pg: PrivatePostgres, redis: PrivateRedis, database: str, shape: Shape) -> None:
        self.pg, self.redis, self.shape = pg, redis, shape
        self.database_url = pg.url(database)
        self.database = database
        self.metrics_port = free_port()
        self.api_port = free_port()
        self.data_dir = redis.root
        self.env = {
            "PROOFLOOP_DATABASE_URL": self.database_url,
            "PROOFLOOP_REDIS_URL": redis.url,
            "PROOFLOOP_DATA_DIR": str(self.data_dir),
            "PROOFLOOP_MIN_INTERVAL_SECONDS": "1",
            "PROOFLOOP_SECRET_KEY": SECRET_KEY,
            "PROOFLOOP_WORKER_METRICS_PORT": str(self.metrics_port),
            # shorter than the short form's pause, so fires in flight fail fast and leave their rows owed
            "PROOFLOOP_DATABASE_STATEMENT_TIMEOUT_SECONDS": "2",
            "PROOFLOOP_DATABASE_CONNECT_TIMEOUT_SECONDS": "2",
        }
        self.api: ServerProcess | None = None
        self.worker: WorkerProcess | None = None
        self.feed: ResumingFeed | None = None
        self.follower: asyncio.Task[None] | None = None
        self.first_due = 0.0
        self.notes: list[str] = []  # figures seen during a fault (reported by the bench, never asserted)
        self.restarted: list[str] = []  # what a supervisor had to start again (only after a kill -9)

    def production_timeouts(self) -> None:
        """The database's statement and connect timeouts at their defaults, as in production (the short
        form's are shorter, so fires in flight fail fast)."""
        for name in (
            "PROOFLOOP_DATABASE_STATEMENT_TIMEOUT_SECONDS",
            "PROOFLOOP_DATABASE_CONNECT_TIMEOUT_SECONDS",
        ):
            self.env.pop(name)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ChaosRun]:
        conn = await asyncpg.connect(self.pg.admin_url)
        try:
            await conn.execute(f'CREATE DATABASE "{self.database}"')
        finally:
            await conn.close()
        await asyncio.to_thread(run_cli, ["migrate"], self.env)
        self.api = ServerProcess(self.env, port=self.api_port).__enter__()
        self.worker = WorkerProcess(self.env)
        self.worker.start()
        try:
            yield self
        finally:
            self.worker.stop()
            self.api.stop()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    async def burst(self) -> datetime:
        """A user with `tasks` short tasks made through the API, all due at the same instants, and a live
        subscriber following them; returns the first due instant."""
        schedule = short_schedule(start_in=self.shape.start_in, every=self.shape.every)
        async with ApiClient(self.api_url) as api:
            token, _ = await _retrying_unavailable(api.register)
            gate = asyncio.Semaphore(8)

            async def create(n: int) -> None:
                task = {"input": {"title": f"chaos-{n}", "method": "PHOTO", "schedule": schedule}}
                async with gate:
                    await _retrying_unavailable(lambda: api.execute(CREATE, task, token=token))

            await asyncio.gather(*(create(n) for n in range(self.shape.tasks)))
        self.feed = ResumingFeed(self.api_url, token)
        return datetime.fromisoformat(schedule["startsAt"])

    async def inject(self, fault: str) -> None:
        assert self.api is not None and self.worker is not None
        if fault == "redis_restart":
            await asyncio.to_thread(self.redis.restart, 1.0)
        elif fault == "redis_flushall":
            await asyncio.to_thread(self.redis.flushall)
        elif fault == "pg_restart":
            await asyncio.to_thread(self.pg.stop)
            await asyncio.sleep(self.shape.down)
            await asyncio.to_thread(self.pg.start)
        elif fault == "pg_pause":
            await asyncio.to_thread(self.pg.pause)
            try:
                self.notes.append(await self._timed_readyz())
                await asyncio.sleep(self.shape.pause)
            finally:
                await asyncio.to_thread(self.pg.resume)
        elif fault == "worker_kill":
            self.worker.kill()
            self.restarted.append("worker")  # as a supervisor would
            self.worker = WorkerProcess(self.env)
            await asyncio.to_thread(self.worker.start)
        elif fault == "api_kill":
            self.api.kill()
            self.restarted.append("api")
            self.api = await asyncio.to_thread(ServerProcess(self.env, port=self.api_port).__enter__)
        elif fault != "none":
            raise ValueError(fault)

    async def start_burst(self) -> None:
        """The burst and its live subscriber; then on until `before` seconds after the first due instant."""
        first_due = await self.burst()
        assert self.feed is not None
        self.follower = asyncio.create_task(self.feed.run())
        self.first_due = first_due.timestamp()
        await asyncio.sleep(max(0.0, self.first_due + self.shape.before - time.time()))

    async def into_next_burst(self) -> None:
        """Until as far into a burst as the first fault came (`before` modulo `every`)."""
        every = self.shape.every
        phase = self.shape.before % every
        elapsed = time.time() - self.first_due
        target = self.first_due + (elapsed // every) * every + phase
        if target < time.time():
            target += every
        await asyncio.sleep(target - time.time())

    async def stop_burst(self) -> None:
        if self.follower is not None:
            self.follower.cancel()
            with contextlib.suppress(BaseException):
                await self.follower

    async def episode(self, fault: str) -> Outcome:
        """One fault: inject it, watch `after` seconds, let the chain catch up, check everything."""
        fault_at = await self._now()
        api_pid, worker_pid = self._pids()
        await self.inject(fault)
        await asyncio.sleep(self.shape.after)
        watch_end = await self._now()
        async with self.connection() as db:
            await self._caught_up(db, watch_end)
            outcome = await self._check(db, fault, fault_at, watch_end)
        await self._check_processes(outcome, fault, api_pid, worker_pid)
        outcome.dead_letters_dropped = await asyncio.to_thread(
            self.worker_metric, "proofloop_dead_letters_total", 'kept="no"'
        )
        async with self.connection() as db:
            await self._check_live(db, outcome)
        return outcome

    async def play(self, faults: Sequence[str]) -> list[Outcome]:
        await self.start_burst()
        outcomes: list[Outcome] = []
        try:
            for fault in faults:
                if outcomes:
                    await self.into_next_burst()
                outcomes.append(await self.episode(fault))
            return outcomes
        finally:
            await self.stop_burst()

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A connection of the checker's own, opened anew each time: a fault may have closed the last."""
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = await asyncpg.connect(self.database_url, timeout=5)
                break
            except (OSError, asyncpg.PostgresError, TimeoutError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
        try:
            yield conn
        finally:
            await conn.close()

    async def _now(self) -> datetime:
        async with self.connection() as db:
            return await _db_now(db)

    def _pids(self) -> tuple[int, int]:
        assert self.api is not None and self.api.proc is not None
        assert self.worker is not None and self.worker.proc is not None
        return self.api.proc.pid, self.worker.proc.pid

    async def _caught_up(self, db: asyncpg.Connection, watch_end: datetime, within: float = 40) -> None:
        """Until nothing due by the end of the watch is still owed (or `within` seconds pass)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            owed = await db.fetchval(
                "SELECT COUNT(*) FROM task_instances WHERE fire_at IS NOT NULL AND fire_at <= $1", watch_end
            )
            unpositioned = await db.fetchval("SELECT COUNT(*) FROM events WHERE position IS NULL")
            if owed == 0 and unpositioned == 0:
                return
            await asyncio.sleep(0.5)

    async def _check(
        self, db: asyncpg.Connection, fault: str, fault_at: datetime, watch_end: datetime
    ) -> Outcome:
        problems: list[str] = []
        owed = await db.fetchval(
            "SELECT COUNT(*) FROM task_instances WHERE fire_at IS NOT NULL AND fire_at <= $1", watch_end
        )
        if owed:
            problems.append(f"{owed} instances due by the end of the watch still owed")
        twice = await db.fetchval(
            "SELECT COUNT(*) FROM (SELECT instance_id FROM events WHERE type = ANY($1::text[])"
            " GROUP BY instance_id HAVING COUNT(*) > 1) AS t",
            list(SETTLING),
        )
        if twice:
            problems.append(f"{twice} instances settled more than once")
        unevented = await db.fetchval(
            "SELECT COUNT(*) FROM task_instances i WHERE i.status = ANY($1::text[]) AND NOT EXISTS"
            " (SELECT 1 FROM events e WHERE e.instance_id = i.id AND e.type = i.status)",
            list(SETTLING),
        )
        if unevented:
            problems.append(f"{unevented} settled instances without their event")
        pending = await db.fetch(
            "SELECT t.id, COUNT(i.id) FILTER (WHERE i.status = 'PENDING') AS n FROM tasks t"
            " LEFT JOIN task_instances i ON i.task_id = t.id WHERE t.state = 'ACTIVE' GROUP BY t.id"
        )
        wrong = [r for r in pending if r["n"] != 1]
        if wrong:
            problems.append(f"{len(wrong)} active tasks without exactly one PENDING instance")
        # never skipped by omission: every occurrence has its instance (EXCUSED when an outage kept it
        # from being planned), so each task's instances follow its grid
        off_grid = await db.fetchval(
            "SELECT COUNT(*) FROM (SELECT due_at - LAG(due_at) OVER (PARTITION BY task_id ORDER BY seq)"
            " AS gap FROM task_instances) AS steps WHERE gap IS NOT NULL AND gap <> make_interval(secs => $1)",
            float(self.shape.every),
        )
        if off_grid:
            problems.append(f"{off_grid} occurrences skipped or doubled")
        early = await db.fetchval(
            "SELECT COUNT(*) FROM task_instances WHERE status = 'MISSED' AND settled_at < closes_at"
        )
        if early:
            problems.append(f"{early} instances settled MISSED before their deadline")
        positions = await db.fetchrow(
            "SELECT COUNT(*) AS n, COUNT(DISTINCT position) AS distinct_n, MIN(position) AS lo,"
            " MAX(position) AS hi FROM events WHERE position IS NOT NULL"
        )
        if positions["n"] and (
            positions["n"] != positions["distinct_n"]
            or positions["lo"] != 1
            or positions["hi"] != positions["n"]
        ):
            problems.append(f"event positions not gap-free: {dict(positions)}")
        window = await db.fetchrow(
            "SELECT COUNT(*) AS n, MAX(EXTRACT(EPOCH FROM settled_at - closes_at)) AS worst,"
            " SUM(link_no) AS links FROM task_instances"
            " WHERE status = 'MISSED' AND settled_at >= $1 AND closes_at <= $2",
            fault_at,
            watch_end,
        )
        n = int(window["n"] or 0)
        excused = await db.fetchval(
            "SELECT COUNT(*) FROM task_instances WHERE status = 'EXCUSED' AND settled_at >= $1", fault_at
        )
        kept = await self._dead_letters_kept()
        if kept:
            problems.append(f"{kept} dead letters kept in Redis")
        return Outcome(
            fault=fault,
            instances=n,
            worst_late_s=float(window["worst"] or 0.0),
            links_per_instance=(int(window["links"] or 0) / n) if n else 0.0,
            dead_letters_kept=kept,
            excused=int(excused or 0),
            problems=problems,
        )

    async def _dead_letters_kept(self) -> int:
        import redis as sync_redis

        client = sync_redis.Redis.from_url(self.redis.url)
        try:
            return int(client.zcard("dramatiq:chain.XQ"))
        finally:
            client.close()

    async def _check_processes(self, outcome: Outcome, fault: str, api_pid: int, worker_pid: int) -> None:
        """Every process is alive and ready by itself; only a killed one was started again."""
        assert self.api is not None and self.worker is not None
        for name, proc in (("api", self.api), ("worker", self.worker)):
            if proc.proc is None or proc.proc.poll() is not None:
                outcome.problems.append(f"{name} process exited")
        now_pids = self._pids()
        if now_pids[0] != api_pid and fault != "api_kill":
            outcome.problems.append("the API was restarted")
        if now_pids[1] != worker_pid and fault != "worker_kill":
            outcome.problems.append("the worker was restarted")
        for name, url in (
            ("api", f"{self.api_url}/readyz"),
            ("worker", f"http://127.0.0.1:{self.metrics_port}/readyz"),
        ):
            status = await _eventually_ready(url)
            if status != 200:
                outcome.problems.append(f"{name} /readyz answers {status}")

    async def _timed_readyz(self) -> str:
        started = time.monotonic()
        status = await asyncio.to_thread(http_status, f"{self.api_url}/readyz")
        return f"API /readyz answered {status} in {time.monotonic() - started:.2f} s"

    def worker_metric(self, name: str, labels: str = "") -> float:
        """The sum of a metric's samples (those whose labels contain `labels`) on the worker's /metrics."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and labels in line:
                total += float(line.rsplit(" ", 1)[1])
        return total

    async def _check_live(self, db: asyncpg.Connection, outcome: Outcome, within: float = 20) -> None:
        """The subscriber received every positioned event exactly once, in order (across reconnects)."""
        assert self.feed is not None
        latest = int(await db.fetchval("SELECT COALESCE(MAX(position), 0) FROM events"))
        deadline = time.monotonic() + within
        while time.monotonic() < deadline and (not self.feed.positions or self.feed.positions[-1] < latest):  # noqa: ASYNC110
            await asyncio.sleep(0.2)
        got = [p for p in self.feed.positions if p <= latest]
        if got != list(range(1, latest + 1)):
            missing = sorted(set(range(1, latest + 1)) - set(got))
            outcome.problems.append(
                f"live events: {len(got)} received of {latest}, missing {missing[:10]},"
                f" duplicates {len(got) - len(set(got))}"
            )


async def _eventually_ready(url: str, within: float = 20) -> int:
    deadline = time.monotonic() + within
    while True:
        status = await asyncio.to_thread(http_status, url)
        if status == 200 or time.monotonic() > deadline:
            return status
        await asyncio.sleep(0.5)


async def _db_now(db: asyncpg.Connection) -> datetime:
    now: datetime = await db.fetchval("SELECT clock_timestamp()")
    return now.astimezone(UTC)


def describe(outcome: Outcome) -> str:
    return json.dumps(
        {
            "fault": outcome.fault,
            "instances": outcome.instances,
            "worst_late_s": round(outcome.worst_late_s, 2),
            "links_per_instance": round(outcome.links_per_instance, 2),
            "dead_letters_dropped": outcome.dead_letters_dropped,
            "excused": outcome.excused,
            "problems": outcome.problems,
        }
    )

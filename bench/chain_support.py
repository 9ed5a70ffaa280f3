"""Shared setup for the chain benchmarks.

Every benchmark runs on resources of its own, created here and removed on exit, even on failure:
a private `redis-server` on a free port (never the shared one), a private PostgreSQL database
(`proofloop_bench_<random>`, migrated with `cli migrate`, dropped WITH (FORCE)), and the worker
processes it starts (stopped, then their process groups killed). A SIGALRM bounds the whole run.

Worker settings are the same for Proofloop and raw Dramatiq: 1 process (BENCH_PROCESSES) x 8 threads
(BENCH_THREADS), worker_timeout 100 ms.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import asyncpg
import psutil
import redis

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.ports import free_port  # noqa: E402
from settings import Settings  # noqa: E402

WORKER_TIMEOUT_MS = Settings.model_fields["worker_poll_milliseconds"].default  # the workers' default

PG_ADMIN_URL = os.environ.get("PROOFLOOP_BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres")
REDIS_SERVER = os.environ.get("PROOFLOOP_BENCH_REDIS_SERVER", "/usr/bin/redis-server")
PROCESSES = int(os.environ.get("BENCH_PROCESSES", "1"))
THREADS = int(os.environ.get("BENCH_THREADS", "8"))
RAW_QUEUE = "raw"
RAW_ACTOR = "raw.noop"
RAW_RAN_KEY = "bench:raw:ran"  # the raw actor appends "tag eta_ms ran_ms" here
RAW_REDIS_ENV = "BENCH_RAW_REDIS_URL"
SETTLING = ("MISSED", "VERIFIED", "REJECTED")


class BenchTimeout(Exception):
    """The benchmark ran past its time limit (SIGALRM)."""


# ---------------------------------------------------------------------------------------------- statistics


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Lateness:
    """Lateness figures in milliseconds."""

    n: int
    p50: float
    p99: float
    max: float

    @classmethod
    def of(cls, late_ms: Sequence[float]) -> Lateness:
        return cls(
            n=len(late_ms),
            p50=percentile(late_ms, 50),
            p99=percentile(late_ms, 99),
            max=max(late_ms) if late_ms else math.nan,
        )

    def text(self) -> str:
        return f"p50 {ms(self.p50)} / p99 {ms(self.p99)} / max {ms(self.max)}"


def ms(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value / 1000:.2f} s" if abs(value) >= 10_000 else f"{value:.0f} ms"


# -------------------------------------------------------------------------------------------------- output


@dataclass(frozen=True)
class Row:
    scenario: str
    proofloop: str
    raw: str
    target: str
    met: bool | None  # None: a figure with no target


def print_table(title: str, rows: Sequence[Row]) -> None:
    header = ("scenario", "Proofloop", "raw Dramatiq", "target", "met?")
    cells = [(r.scenario, r.proofloop, r.raw, r.target, verdict(r.met)) for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    line = "  ".join("-" * w for w in widths)
    print(f"\n== {title} ({machine_note()})")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print(line)
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)))
    print("\nmarkdown:")
    for c in cells:
        print("| " + " | ".join(c) + " |")
    sys.stdout.flush()


def verdict(met: bool | None) -> str:
    return "-" if met is None else ("yes" if met else "NO")


def machine_note() -> str:
    load = os.getloadavg()[0]
    return f"{PROCESSES} process x {THREADS} threads, worker_timeout {WORKER_TIMEOUT_MS} ms; {os.cpu_count()} cores, load {load:.1f}"


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# ----------------------------------------------------------------------------------------------- processes


class Proc:
    """A child process in its own session, logging to a file; stop() is graceful, kill() is kill -9."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}-{uuid.uuid4().hex[:6]}.log"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                args, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait_for_log(self, marker: str, timeout: float = 60, count: int = 1) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.log().count(marker) >= count:
                return
            if not self.running():
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}):\n{self.log()[-3000:]}")
            time.sleep(0.1)
        raise RuntimeError(f"{self.name}: no {marker!r} within {timeout} s:\n{self.log()[-3000:]}")

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM to the command alone (it stops its children in order), then SIGKILL to the group."""
        if self.running():
            self.proc.send_signal(signal.SIGTERM)
            with suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=timeout)
        self._kill_group()

    def kill(self) -> None:
        """kill -9 of the whole process group, as a crash would."""
        self._kill_group()

    def _kill_group(self) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # our own session: only what this Proc started
        self.proc.wait()

    def cpu_seconds(self) -> float:
        """CPU (user + system) of this process and every live descendant (Dramatiq's worker processes)."""
        root = psutil.Process(self.proc.pid)
        total = 0.0
        for process in (root, *root.children(recursive=True)):
            try:
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def rss_bytes(self) -> tuple[int, int]:
        """(RSS of the dramatiq worker processes, RSS of every process in the tree)."""
        try:
            root = psutil.Process(self.proc.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0, 0
        workers = total = 0
        for p in tree:
            try:
                rss = p.memory_info().rss
                cmd = " ".join(p.cmdline())
                total += rss
                # dramatiq's main process forks the worker processes: those are the ones without children
                if "dramatiq" in cmd and not p.children():
                    workers += rss
            except psutil.NoSuchProcess:
                continue
        return workers, total


# --------------------------------------------------------------------------------------------- environment


@dataclass
class BenchEnv:
    name: str
    redis_url: str
    database_url: str
    data_dir: Path
    procs: list[Proc] = field(default_factory=list)

    def child_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROOFLOOP_")}
        env.update(
            {
                "PYTHONPATH": str(ROOT),
                "PROOFLOOP_DATABASE_URL": self.database_url,
                "PROOFLOOP_REDIS_URL": self.redis_url,
                "PROOFLOOP_DATA_DIR": str(self.data_dir),
                "PROOFLOOP_SECRET_KEY": "bench-secret-key",
                "PROOFLOOP_WORKER_METRICS_PORT": "0",  # a shared port would clash with other runs
                "dramatiq_worker_timeout": str(WORKER_TIMEOUT_MS),
            }
        )
        env.update(extra or {})
        return env

    def proofloop_worker(self, extra_env: dict[str, str] | None = None, processes: int = PROCESSES) -> Proc:
        """`proofloop worker --processes 1 --threads 8` (which runs `python -m dramatiq actors.worker`)."""
        args = [
            sys.executable,
            "-m",
            "cli",
            "worker",
            "--processes",
            str(processes),
            "--threads",
            str(THREADS),
        ]
        proc = Proc("proofloop-worker", args, self.child_env(extra_env), self.data_dir)
        self.procs.append(proc)
        proc.wait_for_log("Worker process is ready for action", count=processes)
        return proc

    def raw_worker(self, processes: int = PROCESSES, extra_env: dict[str, str] | None = None) -> Proc:
        """Raw Dramatiq: a no-op async actor on a plain RedisBroker + AsyncIO, same worker settings."""
        args = [
            sys.executable,
            "-m",
            "dramatiq",
            "bench.raw_dramatiq",
            "--processes",
            str(processes),
            "--threads",
            str(THREADS),
            "--queues",
            RAW_QUEUE,
        ]
        env = self.child_env({RAW_REDIS_ENV: self.redis_url, **(extra_env or {})})
        proc = Proc("raw-worker", args, env, self.data_dir)
        self.procs.append(proc)
        proc.wait_for_log("Worker process is ready for action", count=processes)
        return proc

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url)

    def flushall(self) -> None:
        """FLUSHALL of the PRIVATE redis-server (this URL is ours alone)."""
        if not self.redis_url.startswith("redis://127.0.0.1:") or ":6379/" in self.redis_url:
            raise RuntimeError(f"refusing to FLUSHALL {self.redis_url}: not the private redis-server")
        self.redis().flushall()


def _raise_timeout(signum: int, frame: FrameType | None) -> None:
    raise BenchTimeout("time limit reached")


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _admin(sql: str) -> None:
    async def run() -> None:
        conn = await asyncpg.connect(PG_ADMIN_URL)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run())


@contextmanager
def bench_env(name: str, time_limit: float = 175) -> Iterator[BenchEnv]:
    """A private Redis, a private migrated database and a data dir; everything removed on exit."""
    signal.signal(signal.SIGTERM, _raise_exit)
    signal.signal(signal.SIGALRM, _raise_timeout)
    signal.setitimer(signal.ITIMER_REAL, time_limit)
    db_name = f"proofloop_bench_{uuid.uuid4().hex[:10]}"
    redis_port = free_port()
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
        data_dir = Path(tmp)
        redis_proc = Proc(
            "redis",
            [
                REDIS_SERVER,
                "--port",
                str(redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            dict(os.environ),
            data_dir,
        )
        db_created = False
        env = BenchEnv(
            name=name,
            redis_url=f"redis://127.0.0.1:{redis_port}/0",
            database_url=PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{db_name}",
            data_dir=data_dir,
        )
        try:
            _wait_for_redis(env)
            _admin(f'CREATE DATABASE "{db_name}"')
            db_created = True
            subprocess.run(
                [sys.executable, "-m", "cli", "migrate"],
                env=env.child_env(),
                cwd=ROOT,
                check=True,
                capture_output=True,
                timeout=120,
            )
            say(f"{name}: private redis :{redis_port}, database {db_name}")
            yield env
        except BaseException:
            for proc in env.procs:
                if proc.log_path.exists():
                    print(f"--- last lines of {proc.name} log ---\n{proc.log()[-2000:]}", file=sys.stderr)
            raise
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            for proc in reversed(env.procs):
                proc.stop(timeout=10)
            redis_proc.stop(timeout=5)
            if db_created:
                _admin(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
            say(f"{name}: cleaned up (workers stopped, redis :{redis_port} stopped, {db_name} dropped)")


def _wait_for_redis(env: BenchEnv) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if env.redis().ping():
                return
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError("private redis-server did not answer")


def run_main(
    name: str, scenario: Callable[[BenchEnv], Coroutine[Any, Any, None]], time_limit: float = 175
) -> None:
    with bench_env(name, time_limit) as env:
        asyncio.run(scenario(env))


# ------------------------------------------------------------------------------------------- database rows


async def open_orm(env: BenchEnv) -> None:
    """Tortoise and the Proofloop broker in this process, so tasks are created through the real path."""
    from actors.broker import configure_broker
    from runtime import open_database
    from settings import Settings

    await open_database(Settings(database_url=env.database_url, redis_url=env.redis_url))
    configure_broker(env.redis_url)


async def close_orm() -> None:
    from runtime import close_database

    await close_database()


async def bench_user(db: asyncpg.Connection) -> str:
    """A user row owning the benchmark's tasks (no password: nobody logs in)."""
    user_id = str(uuid.uuid4())
    await db.execute(
        "INSERT INTO users (id, email, display_name, timezone, password_hash, created_at)"
        " VALUES ($1, $2, 'bench', 'UTC', '!', now())",
        user_id,
        f"bench-{user_id[:8]}@example.com",
    )
    return user_id


_BULK_SQL = """
WITH t AS (
    INSERT INTO tasks (id, owner_id, title, method, starts_at, rrule, timezone, window_seconds,
                       grace_seconds, state, chain_version, last_seq, created_at, updated_at,
                       require_capture_time, gps_avoid, gps_latitude, gps_longitude, gps_radius_meters,
                       gps_max_accuracy_meters, gps_max_sample_gap_seconds, quota_count, quota_period,
                       quota_week_start, quota_min_gap_seconds)
    SELECT gen_random_uuid(), $1, $2 || '-' || g, $5, $6, $7, $8, $9, 0, 'ACTIVE', 1, 1, now(), now(),
           false, $10, $11, $11, $12, $12, $13, $14, $15, $16, $17
    FROM generate_series(1, $4) AS g
    RETURNING id, chain_version
)
INSERT INTO task_instances (id, task_id, seq, chain_version, opens_at, due_at, closes_at, status, created_at,
                            fire_at, link_no, link_for, proofs_counted)
SELECT gen_random_uuid(), t.id, 1, t.chain_version, $3::timestamptz - interval '60 seconds', $3, $3, 'PENDING', now(),
       $3, 0, NULL, $18
FROM t
"""

# what each kind of task adds to a bulk row: (method, rrule, timezone, window, gps, quota, counted)
_ONE_OFF = ("PHOTO", None, "UTC", 60, None, None, 0)
_BERLIN = (52.52, 150.0, 60)  # (latitude = longitude, radius and accuracy, max sample gap)
KINDS: dict[str, tuple[Any, ...]] = {
    "one-off": _ONE_OFF,
    # 3 proofs a week in Berlin, two of them in: MISSED at the week's end, next week planned (set path)
    "quota": (
        "PHOTO",
        "FREQ=WEEKLY;BYDAY=MO;WKST=MO;BYHOUR=0;BYMINUTE=0;BYSECOND=0",
        "Europe/Berlin",
        0,
        None,
        (3, "WEEK", "MO", 0),
        2,
    ),
    # avoid-a-place with no samples: NOT_ENOUGH_SAMPLES, judged row by row
    "avoid": ("GPS", None, "UTC", 60, _BERLIN, None, 0),
}


async def bulk_pending(
    db: asyncpg.Connection, owner_id: str, batch: str, count: int, fire_at: datetime, kind: str = "one-off"
) -> None:
    """`count` ACTIVE tasks of `kind` (KINDS) titled `batch-N`, each with its PENDING instance (seq 1) due
    at `fire_at` (grace 0, so fire_at = due_at = closes_at), link_no 0 and link_for NULL: no link yet, the
    pump's to send. A recurring kind starts at `fire_at` (its first due time)."""
    method, rrule, zone, window, gps, quota, counted = KINDS[kind]
    lat, radius, gap = gps if gps else (None, None, None)
    q_count, q_period, q_week, q_gap = quota if quota else (None, None, None, None)
    await db.execute(
        _BULK_SQL, owner_id, batch, fire_at, count, method, fire_at, rrule, zone, window,
        gps is not None, lat, radius, gap, q_count, q_period, q_week, q_gap, counted,
    )  # fmt: skip


async def db_now(db: asyncpg.Connection) -> datetime:
    now: datetime = await db.fetchval("SELECT clock_timestamp()")
    return now.astimezone(UTC)


def whole_second(at: datetime) -> datetime:
    return at.replace(microsecond=0) + timedelta(seconds=1)


@dataclass(frozen=True)
class BatchState:
    total: int
    settled: int
    linked: int  # instances whose link has been sent (link_no > 0)
    links_sent: int  # links sent for the batch, by the chain and the pump (sum of link_no)
    late_ms: list[float]  # settled_at - due (fire_at of the PENDING instance), settled ones
    first_ms: float  # first settlement - due, ms (NaN when none)
    last_ms: float  # last settlement - due, ms (NaN when none)
    unsettled: int  # instances with no settling event
    twice: int  # instances with more than one settling event


async def batch_state(db: asyncpg.Connection, batch: str, with_events: bool = False) -> BatchState:
    """The batch's first instances (one-off tasks have only one): settled count and lateness."""
    rows = await db.fetch(
        """
        SELECT i.status, i.link_no,
               EXTRACT(EPOCH FROM (i.settled_at - i.closes_at)) * 1000 AS late_ms
        FROM task_instances i JOIN tasks t ON t.id = i.task_id
        WHERE t.title LIKE $1 AND i.seq = 1
        """,
        f"{batch}-%",
    )
    late = [float(r["late_ms"]) for r in rows if r["status"] in SETTLING and r["late_ms"] is not None]
    unsettled = twice = 0
    if with_events:
        counts = await db.fetch(
            """
            SELECT i.id, COUNT(e.id) AS n
            FROM task_instances i JOIN tasks t ON t.id = i.task_id
            LEFT JOIN events e ON e.instance_id = i.id AND e.type = ANY($2::text[])
            WHERE t.title LIKE $1 AND i.seq = 1
            GROUP BY i.id
            """,
            f"{batch}-%",
            list(SETTLING),
        )
        unsettled = sum(1 for r in counts if r["n"] == 0)
        twice = sum(1 for r in counts if r["n"] > 1)
    return BatchState(
        total=len(rows),
        settled=len(late),
        linked=sum(1 for r in rows if r["link_no"] > 0),
        links_sent=sum(int(r["link_no"]) for r in rows),
        late_ms=late,
        first_ms=min(late) if late else math.nan,
        last_ms=max(late) if late else math.nan,
        unsettled=unsettled,
        twice=twice,
    )


async def wait_batch_settled(
    db: asyncpg.Connection, batch: str, until: float, poll: float = 0.25
) -> BatchState:
    """Poll until every instance of the batch is settled or the monotonic deadline `until` passes."""
    while True:
        state = await batch_state(db, batch)
        if state.settled >= state.total or time.monotonic() >= until:
            return state
        await asyncio.sleep(poll)


async def wait_due_settled(
    db: asyncpg.Connection, fire_at: datetime, until: float, poll: float = 0.25
) -> None:
    """Poll until no row still owes work at `fire_at` (a burst's instant) or the deadline `until` passes.

    One count on the fire_at index, over the rows still owed only: the machine's cores are the workers'
    and the database's during a burst, not the poller's (batch_state reads the whole batch each time)."""
    while await db.fetchval("SELECT COUNT(*) FROM task_instances WHERE fire_at = $1", fire_at):
        if time.monotonic() >= until:
            return
        await asyncio.sleep(poll)


async def wait_batch_linked(db: asyncpg.Connection, batch: str, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (await batch_state(db, batch)).linked >= count:
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"the pump did not link {count} instances of {batch} within {timeout} s")


# ------------------------------------------------------------------------------------- raw Dramatiq baseline


class RawSender:
    """Sends the raw actor's messages through an ordinary RedisBroker (not the process's global broker)."""

    def __init__(self, redis_url: str) -> None:
        from dramatiq.brokers.redis import RedisBroker

        self.broker = RedisBroker(url=redis_url)  # type: ignore[no-untyped-call]

    def send(self, tag: str, eta: float) -> None:
        """One no-op message due at `eta` (epoch seconds), delayed by eta - now."""
        import dramatiq

        eta_ms = int(eta * 1000)
        message: dramatiq.Message[object] = dramatiq.Message(
            queue_name=RAW_QUEUE, actor_name=RAW_ACTOR, args=(tag, eta_ms), kwargs={}, options={}
        )
        delay = eta_ms - int(time.time() * 1000)
        self.broker.enqueue(message, delay=delay if delay > 0 else None)

    def send_many(self, items: Sequence[tuple[str, float]]) -> None:
        for tag, eta in items:
            self.send(tag, eta)

    def close(self) -> None:
        self.broker.close()


@dataclass(frozen=True)
class RawRun:
    tag: str
    eta_ms: int
    ran_ms: float

    @property
    def late_ms(self) -> float:
        return self.ran_ms - self.eta_ms


def raw_runs(env: BenchEnv, prefix: str) -> list[RawRun]:
    runs = []
    for item in env.redis().lrange(RAW_RAN_KEY, 0, -1):
        tag, eta_ms, ran_ms = (item.decode() if isinstance(item, bytes) else str(item)).split()
        if tag.startswith(prefix):
            runs.append(RawRun(tag, int(eta_ms), float(ran_ms)))
    return runs


def wait_raw(env: BenchEnv, prefix: str, count: int, until: float) -> list[RawRun]:
    """Poll until `count` raw messages tagged `prefix…` ran, or the monotonic deadline `until` passes."""
    while True:
        runs = raw_runs(env, prefix)
        if len(runs) >= count or time.monotonic() >= until:
            return runs
        time.sleep(0.25)


async def wait_raw_async(env: BenchEnv, prefix: str, count: int, until: float) -> list[RawRun]:
    return await asyncio.to_thread(wait_raw, env, prefix, count, until)


def fmt_rss(rss: tuple[int, int]) -> str:
    return f"{rss[0] / 2**20:.0f} MB"

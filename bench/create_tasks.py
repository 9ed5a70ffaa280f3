"""createTask throughput through the running API on PostgreSQL (target: >= 1,000 tasks/s with batched
aliases).

One `proofloop serve` process on a private database and redis-server. Clients send documents of A
`createTask` aliases back to back for a fixed time, each as one user until that user nears the per-user
task quota (PROOFLOOP_MAX_TASKS_PER_USER, the default 200: enforced as in production), then as the next
of a pool of users registered beforehand. Figures: tasks/s, document latency p50/p99, the CPU each task
cost the API process and the PostgreSQL backends (tasks/s moves with whatever else a shared machine
runs; CPU per task much less), and the SQL statements per task (from X-Proofloop-Statements, probed on a
second API with PROOFLOOP_COUNT_STATEMENTS). Every task is a daily task starting tomorrow (beyond the link horizon, like
most tasks people make: no link is sent at creation); `--near` makes them due within the horizon instead,
so every creation also sends its link.

Run: .venv/bin/python -m bench.create_tasks [--seconds 5] [--aliases 1,30] [--clients 1,4] [--users 60]
     [--workers N] [--compare GIT_REF: that commit's API measured first, in the same run]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import psutil

from bench.chain_support import percentile, say
from bench.live_env import live_env
from harness.proofloop import ROOT, free_port

SELECTION = "id currentInstance { id dueAt }"
QUOTA = 200  # PROOFLOOP_MAX_TASKS_PER_USER's default
CORES = os.cpu_count() or 1
PASSWORD = "correct horse battery"


def create_document(aliases: int) -> str:
    fields = " ".join(
        f"t{i}: createTask(input: {{title: $title, method: PHOTO, schedule: $schedule}}) {{ {SELECTION} }}"
        for i in range(aliases)
    )
    return f"mutation($title: String!, $schedule: ScheduleInput!) {{ {fields} }}"


def schedule(near: bool) -> dict[str, Any]:
    now = datetime.now(UTC).replace(microsecond=0)
    starts = now + (timedelta(seconds=120) if near else timedelta(days=1))
    return {
        "startsAt": starts.isoformat(),
        "rrule": "FREQ=DAILY",
        "timezone": "Europe/Berlin",
        "windowSeconds": 3600,
        "graceSeconds": 60,
    }


class Api:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, f"{url}/graphql"

    async def post(
        self, query: str, variables: dict[str, Any], token: str | None = None
    ) -> tuple[dict[str, Any], int | None]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with self.session.post(
            self.url, json={"query": query, "variables": variables}, headers=headers
        ) as response:
            body = await response.json()
            statements = response.headers.get("x-proofloop-statements")
        if body.get("errors"):
            raise RuntimeError(json.dumps(body["errors"])[:500])
        data: dict[str, Any] = body["data"]
        return data, int(statements) if statements else None

    async def register(self, name: str) -> str:
        data, _ = await self.post(
            'mutation($e: String!, $p: String!) { register(email: $e, password: $p, displayName: "b") { token } }',
            {"e": f"{name}@example.com", "p": PASSWORD},
        )
        token: str = data["register"]["token"]
        return token


class CpuMeter:
    """CPU seconds spent by the API processes and by the PostgreSQL backends serving the bench's database:
    what a task costs whatever else the machine runs (on a shared machine tasks/s moves with the load)."""

    def __init__(self, api_pid: int, database: str) -> None:
        self.api_pid, self.database = api_pid, database

    def _api(self) -> list[psutil.Process]:
        root = psutil.Process(self.api_pid)
        return [root, *root.children(recursive=True)]

    def _postgres(self) -> list[psutil.Process]:
        found = []
        for proc in psutil.process_iter(["name", "cmdline"]):
            cmdline = " ".join(proc.info["cmdline"] or ())
            if cmdline.startswith("postgres:") and f" {self.database} " in cmdline:
                found.append(proc)
        return found

    def read(self) -> dict[tuple[str, int], float]:
        spent: dict[tuple[str, int], float] = {}
        for role, procs in (("api", self._api()), ("postgres", self._postgres())):
            for proc in procs:
                try:
                    times = proc.cpu_times()
                except psutil.Error:
                    continue
                spent[(role, proc.pid)] = times.user + times.system
        return spent

    @staticmethod
    def spent(before: dict[tuple[str, int], float], after: dict[tuple[str, int], float]) -> dict[str, float]:
        totals = {"api": 0.0, "postgres": 0.0}
        for key, seconds in after.items():
            totals[key[0]] += seconds - before.get(key, 0.0)
        return totals


@dataclass(frozen=True)
class Run:
    aliases: int
    clients: int
    tasks: int
    seconds: float
    latencies_ms: list[float]
    cpu: dict[str, float]

    @property
    def per_s(self) -> float:
        return self.tasks / self.seconds

    def cpu_ms(self, role: str) -> float:
        return self.cpu[role] / self.tasks * 1000 if self.tasks else float("nan")

    def line(self) -> str:
        api, pg = self.cpu_ms("api"), self.cpu_ms("postgres")
        return (
            f"| {self.aliases} | {self.clients} | {self.per_s:,.0f} | "
            f"{percentile(self.latencies_ms, 50):.0f} / {percentile(self.latencies_ms, 99):.0f} ms | "
            f"{api:.2f} / {pg:.2f} ms | {CORES * 1000 / (api + pg):,.0f} | {self.tasks:,} |"
        )


class Users:
    """Registered users' tokens, each used until another document would take it past the quota."""

    def __init__(self, tokens: list[str]) -> None:
        self.fresh = tokens
        self.made: dict[str, int] = {}

    def take(self, aliases: int, current: str | None) -> str:
        if current is not None and self.made[current] + aliases <= QUOTA:
            return current
        if not self.fresh:
            raise RuntimeError("out of users: register more (--users)")
        token = self.fresh.pop()
        self.made[token] = 0
        return token


async def client_loop(
    api: Api, users: Users, document: str, variables: dict[str, Any], until: float, latencies: list[float]
) -> int:
    made, token, aliases = 0, None, document.count("createTask(")
    while time.monotonic() < until:
        token = users.take(aliases, token)
        began = time.perf_counter()
        data, _ = await api.post(document, variables, token)
        latencies.append((time.perf_counter() - began) * 1000)
        made += len(data)
        users.made[token] += len(data)
    return made


async def measure(
    api: Api,
    users: Users,
    aliases: int,
    clients: int,
    seconds: float,
    near: bool,
    meter: CpuMeter | None = None,
) -> Run:
    document = create_document(aliases)
    variables = {"title": "Bench", "schedule": schedule(near)}
    warm = users.take(aliases, None)
    await api.post(document, variables, warm)  # warm: parse and validation are cached from now on
    users.made[warm] += aliases
    latencies: list[float] = []
    before = meter.read() if meter else {}
    began = time.monotonic()
    made = await asyncio.gather(
        *(client_loop(api, users, document, variables, began + seconds, latencies) for _ in range(clients))
    )
    elapsed = time.monotonic() - began
    cpu = CpuMeter.spent(before, meter.read()) if meter else {"api": 0.0, "postgres": 0.0}
    return Run(aliases, clients, sum(made), elapsed, latencies, cpu)


async def statements_per_document(url: str, aliases: int, near: bool) -> int | None:
    async with aiohttp.ClientSession() as session:
        api = Api(session, url)
        token = await api.register(f"probe-{aliases}-{os.urandom(3).hex()}")
        _, count = await api.post(create_document(aliases), {"title": "P", "schedule": schedule(near)}, token)
        return count


def server_env(base: dict[str, str], extra: dict[str, str] | None = None) -> dict[str, str]:
    return {
        **base,
        # the users are registered from one address: the per-address limit is not what is measured
        "PROOFLOOP_AUTH_ADDRESS_ATTEMPTS": "100000",
        "PROOFLOOP_PASSWORD_HASH_THREADS": str(CORES),  # registering the pool, before any measurement
        "PROOFLOOP_LOG_LEVEL": "WARNING",
        **(extra or {}),
    }


class ApiProcess:
    """`proofloop serve --workers N` from a source tree (this one, or the --compare commit's export)."""

    def __init__(self, root: Path, env: dict[str, str], workers: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile(prefix="bench-api-", suffix=".log", delete=False)  # noqa: SIM115
        child = {k: v for k, v in os.environ.items() if not k.startswith("PROOFLOOP_")}
        args = [sys.executable, "-m", "cli", "serve", "--port", str(self.port), "--workers", str(workers)]
        self.proc = subprocess.Popen(
            args, cwd=root, env={**child, **env, "PYTHONPATH": str(root)}, stdout=self.log, stderr=self.log
        )

    async def ready(self) -> None:
        deadline = time.monotonic() + 60
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the API exited: {self.log_text()[-2000:]}")
                try:
                    async with session.get(f"{self.url}/readyz") as response:
                        if response.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.2)
        raise RuntimeError("the API did not become ready")

    def log_text(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        Path(self.log.name).unlink(missing_ok=True)


@contextlib.contextmanager
def source_tree(ref: str | None) -> Iterator[Path]:
    """This tree, or `git archive REF` exported to a temporary directory (the same venv runs it)."""
    if ref is None:
        yield ROOT
        return
    with tempfile.TemporaryDirectory(prefix="bench-base-") as tmp:
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        yield Path(tmp)


async def register_users(api: Api, count: int) -> Users:
    gate = asyncio.Semaphore(8)  # below PROOFLOOP_PASSWORD_HASH_QUEUE

    async def register(name: str) -> str:
        async with gate:
            return await api.register(name)

    names = [f"u{i}-{os.urandom(3).hex()}" for i in range(count)]
    return Users(list(await asyncio.gather(*(register(name) for name in names))))


async def measure_build(
    label: str, root: Path, env: dict[str, str], args: argparse.Namespace
) -> tuple[list[Run], dict[int, int | None]]:
    aliases = [int(a) for a in args.aliases.split(",")]
    clients = [int(c) for c in args.clients.split(",")]
    counts: dict[int, int | None] = {}
    probe = ApiProcess(root, server_env(env, {"PROOFLOOP_COUNT_STATEMENTS": "true"}), 1)
    try:
        await probe.ready()
        for a in aliases:
            counts[a] = await statements_per_document(probe.url, a, args.near)
    finally:
        probe.stop()
    runs: list[Run] = []
    database = env["PROOFLOOP_DATABASE_URL"].rsplit("/", 1)[1]
    server = ApiProcess(root, server_env(env), args.workers)
    try:
        await server.ready()
        meter = CpuMeter(server.proc.pid, database)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            api = Api(session, server.url)
            say(f"{label}: registering {args.users} users")
            users = await register_users(api, args.users)
            for c in clients:
                for a in aliases:
                    run = await measure(api, users, a, c, args.seconds, args.near, meter)
                    say(f"{label}: aliases {a}, clients {c}: {run.per_s:,.0f} tasks/s")
                    runs.append(run)
    finally:
        server.stop()
    return runs, counts


async def scenario(env: dict[str, str], args: argparse.Namespace) -> None:
    builds: list[tuple[str, list[Run], dict[int, int | None]]] = []
    labels = ([f"before ({args.compare})"] if args.compare else []) + ["this tree"]
    for label in labels:
        with source_tree(args.compare if label != "this tree" else None) as root:
            runs, counts = await measure_build(label, root, env, args)
        builds.append((label, runs, counts))
    load = os.getloadavg()[0]
    kind = "due within the horizon (link sent)" if args.near else "daily, first due tomorrow"
    print(f"\n== createTask through {args.workers} API process(es), {kind}; {CORES} cores, load {load:.1f}")
    print(
        "| code | aliases per document | clients | tasks/s | document latency p50 / p99 "
        f"| CPU per task: API / PostgreSQL | tasks/s the {CORES} cores allow | tasks made |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, runs, _ in builds:
        for run in runs:
            print(f"| {label} {run.line()}")
    for label, _, counts in builds:
        for a, n in counts.items():
            per_task = f"{n / a:.1f}" if n is not None else "n/a"
            print(f"{label}: statements per document of {a} alias(es): {n} ({per_task} per task)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="each measurement's duration")
    parser.add_argument("--aliases", default="1,30", help="createTask aliases per document (max 30)")
    parser.add_argument("--clients", default="1,4", help="concurrent clients, each its own user")
    parser.add_argument("--near", action="store_true", help="tasks due within the link horizon")
    parser.add_argument("--users", type=int, default=60, help="users registered beforehand (200 tasks each)")
    parser.add_argument("--workers", type=int, default=1, help="API processes (`serve --workers`)")
    parser.add_argument("--compare", help="a git commit to measure first, in the same run (before/after)")
    args = parser.parse_args()
    with live_env() as (env, _):
        asyncio.run(scenario(env, args))


if __name__ == "__main__":
    main()

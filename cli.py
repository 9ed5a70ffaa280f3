"""The `proofloop` command: dev | serve | worker | migrate | demo | export-schema."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from settings import Settings, get_settings

ROOT = Path(__file__).resolve().parent


@contextmanager
def redis_for(settings: Settings) -> Iterator[str]:
    """The Redis URL to use; with no PROOFLOOP_REDIS_URL, an embedded redis-server owned by this command."""
    if settings.redis_url:
        yield settings.redis_url
        return
    from realtime.embedded_redis import EmbeddedRedis

    embedded = EmbeddedRedis(settings.embedded_redis_socket)
    url = embedded.start()
    os.environ["PROOFLOOP_REDIS_URL"] = url  # child processes share it
    try:
        yield url
    finally:
        embedded.stop()


def cmd_migrate(args: argparse.Namespace) -> int:
    """Apply the database migrations (PostgreSQL or the embedded SQLite file)."""
    from tortoise import Tortoise
    from tortoise.migrations.api import migrate

    from models.config import tortoise_config

    # a migration may rightly run longer than any request's statement
    settings = get_settings().model_copy(update={"database_statement_timeout_seconds": 0})

    async def run() -> None:
        try:
            await migrate(config=tortoise_config(settings))
        finally:
            await Tortoise.close_connections()

    asyncio.run(run())
    print("migrations applied", file=sys.stderr)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the API (uvicorn); --workers N runs N processes behind one port."""
    import uvicorn

    from observability.exposition import MULTIPROC_ENV, private_multiprocess_dir
    from runtime import configure_logging

    settings = get_settings()
    configure_logging(settings)  # uvicorn's records go through our text/JSON formatter (log_config=None)
    # uvicorn re-raises the stop signal after shutting down: exit through a handler of ours instead,
    # so that the embedded Redis this command may have started is stopped too
    signal.signal(signal.SIGTERM, _exit_on_signal)
    with redis_for(settings), ExitStack() as stack:
        if args.workers > 1 and MULTIPROC_ENV not in os.environ:
            # the uvicorn workers sum their metrics through files in a directory of their own
            os.environ[MULTIPROC_ENV] = stack.enter_context(private_multiprocess_dir("api"))
        uvicorn.run(
            "app:create_app",
            factory=True,
            host=args.host or settings.host,
            port=args.port or settings.port,
            workers=args.workers,
            log_level=settings.log_level.lower(),
            log_config=None,
            ws_max_size=1 << 20,
        )
    return 0


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(0)


def worker_command(processes: int, threads: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "dramatiq",
        "actors.worker",
        "--processes",
        str(processes),
        "--threads",
        str(threads),
        "--queues",
        "chain",
        "--skip-logging",
    ]


def worker_env() -> dict[str, str]:
    from actors.broker import WORKER_TIMEOUT_MS

    env = dict(os.environ)
    env.setdefault("dramatiq_worker_timeout", str(WORKER_TIMEOUT_MS))
    return env


def cmd_worker(args: argparse.Namespace) -> int:
    """Run Dramatiq worker processes: the chain's links and the pump; metrics on WORKER_METRICS_PORT."""
    from observability.exposition import MULTIPROC_ENV, private_multiprocess_dir, serve_worker_metrics
    from runtime import configure_logging

    settings = get_settings()
    configure_logging(settings)
    _catch_stop_signals()
    with redis_for(settings), private_multiprocess_dir("worker") as metrics_dir:
        env = worker_env()
        # dramatiq always runs its workers as child processes: they write metric files, this one serves them
        env[MULTIPROC_ENV] = metrics_dir
        serve_worker_metrics(settings.host, settings.worker_metrics_port, metrics_dir)
        child = subprocess.Popen(
            worker_command(args.processes, args.threads or settings.worker_threads),
            env=env,
            cwd=ROOT,
        )
        return _wait_forwarding_signals([child])


_stop_requested = threading.Event()


def _catch_stop_signals() -> None:
    """From now on SIGINT/SIGTERM only ask to stop: installed before any child starts, so a signal that
    arrives during start-up still stops every child instead of killing this process and orphaning them."""

    def request_stop(signum: int, frame: object) -> None:
        _stop_requested.set()

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)


def _wait_forwarding_signals(children: list[subprocess.Popen[bytes]]) -> int:
    """Wait for the children; a stop request stops them all, and any one exiting stops the rest."""
    code = 0
    while not _stop_requested.is_set() and all(c.poll() is None for c in children):
        _stop_requested.wait(0.2)
    for child in children:
        if child.poll() is None:
            child.terminate()
        else:
            code = code or (child.returncode or 0)
    deadline = time.monotonic() + 15
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return 0 if _stop_requested.is_set() else code


def _wait_until_answering(url: str, children: list[subprocess.Popen[bytes]], timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not _stop_requested.is_set():
        if any(c.poll() is not None for c in children):
            return False
        try:
            with urllib.request.urlopen(url, timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def cmd_dev(args: argparse.Namespace) -> int:
    """Everything on the embedded default: migrations, the API with GraphiQL, and one worker."""
    os.environ.setdefault("PROOFLOOP_ENV", "dev")
    get_settings.cache_clear()
    settings = get_settings()
    host, port = args.host or settings.host, args.port or settings.port
    cmd_migrate(args)
    _catch_stop_signals()
    with redis_for(settings):
        env = dict(os.environ)
        # own sessions: a Ctrl-C reaches this process only, which stops the children in order
        api = subprocess.Popen(
            [sys.executable, "-m", "cli", "serve", "--host", host, "--port", str(port)],
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
        worker = subprocess.Popen(
            [sys.executable, "-m", "cli", "worker"], env=env, cwd=ROOT, start_new_session=True
        )
        if _wait_until_answering(f"http://{host}:{port}/healthz", [api, worker]):
            print(
                f"Proofloop is running. GraphiQL: http://{host}:{port}/graphql", file=sys.stderr, flush=True
            )
        return _wait_forwarding_signals([api, worker])


def cmd_export_schema(args: argparse.Namespace) -> int:
    """Print the GraphQL schema (SDL) the code defines; `make schema` writes it to schema.graphql."""
    from schema.schema import schema

    sdl = schema.as_str() + "\n"
    if args.output:
        Path(args.output).write_text(sdl)
    else:
        sys.stdout.write(sdl)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Against a running `make run`: two users, a partnership and short tasks producing live events."""
    from demo import run_demo

    return run_demo(args.url, duration=args.duration)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="proofloop", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, func: object) -> argparse.ArgumentParser:
        doc = (getattr(func, "__doc__", "") or "").strip()
        p = sub.add_parser(name, help=doc.splitlines()[0] if doc else None, description=doc)
        p.set_defaults(func=func)
        return p

    dev = add("dev", cmd_dev)
    dev.add_argument("--host", help="default: PROOFLOOP_HOST")
    dev.add_argument("--port", type=int, help="default: PROOFLOOP_PORT")
    serve = add("serve", cmd_serve)
    serve.add_argument("--host", help="default: PROOFLOOP_HOST")
    serve.add_argument("--port", type=int, help="default: PROOFLOOP_PORT")
    serve.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    worker = add("worker", cmd_worker)
    worker.add_argument("--processes", type=int, default=1, help="Dramatiq worker processes")
    worker.add_argument("--threads", type=int, default=0, help="default: PROOFLOOP_WORKER_THREADS")
    add("migrate", cmd_migrate)
    export = add("export-schema", cmd_export_schema)
    export.add_argument("--output", "-o", help="write to this file instead of stdout")
    demo = add("demo", cmd_demo)
    demo.add_argument("--url", default="http://127.0.0.1:8000", help="a running Proofloop API")
    demo.add_argument("--duration", type=float, default=0, help="seconds to run (0: until Ctrl-C)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())

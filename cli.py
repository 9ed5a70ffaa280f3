"""The `proofloop` command: dev | serve | worker | migrate | demo | export-schema | config-doc."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from runtime import Child, StopSignals, configure_logging, die_with_parent, stop_children
from settings import Settings, get_settings

if TYPE_CHECKING:
    from starlette.applications import Starlette

ROOT = Path(__file__).resolve().parent
log = logging.getLogger("proofloop.cli")


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
    from models.migrating import apply_migrations

    # a migration may rightly run longer than any request's statement
    settings = get_settings().model_copy(update={"database_statement_timeout_seconds": 0})
    asyncio.run(apply_migrations(settings))
    print("migrations applied", file=sys.stderr)
    return 0


# Each command stops its children within these bounds, then kills them (nested: the inner bound is shorter).
API_GRACE_SECONDS = 5  # requests still running when a stop comes
WORKER_GRACE_SECONDS = 5.0  # actors still running when a stop comes
CHILD_GRACE_SECONDS = 10.0  # `proofloop worker` and `serve --workers N` waiting for their processes
DEV_GRACE_SECONDS = 15.0  # `proofloop dev` waiting for its API and worker
# `proofloop dev` restarts a dead worker after 1 s, doubling while it keeps dying; 1 s again after 60 s up
RESTART_BACKOFF_SECONDS = (1.0, 30.0)
RESTART_RESET_SECONDS = 60.0


class _ApiSupervisor(Multiprocess):
    """uvicorn's supervisor of `serve --workers N`, whose stop is bounded: uvicorn's own waits for each
    worker without end, so one worker stuck in its shutdown would hold the command (and its port) forever."""

    def join_all(self) -> None:
        deadline = time.monotonic() + CHILD_GRACE_SECONDS
        for worker in self.processes:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                log.error("API worker %s did not stop within %.0f s: killed", worker.pid, CHILD_GRACE_SECONDS)
                worker.kill()
                worker.process.join()


class _ApiServer(uvicorn.Server):
    """uvicorn's server with our stop signals: its own handlers would be installed only once it runs."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def ask_to_exit(self, signals_received: int) -> None:  # called from the signal handler: no locks
        self.should_exit = True
        self.force_exit = signals_received > 1


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the API (uvicorn); --workers N runs N processes behind one port."""
    from observability.exposition import MULTIPROC_ENV, private_multiprocess_dir
    from web.http_protocol import GuardedHttpProtocol

    # where it listens is where its own links lead without PROOFLOOP_API_URL (Settings.api_base_url)
    for name, given in (("PROOFLOOP_HOST", args.host), ("PROOFLOOP_PORT", args.port)):
        if given:
            os.environ[name] = str(given)
    get_settings.cache_clear()
    settings = get_settings()
    configure_logging(settings)  # uvicorn's records go through our text/JSON formatter (log_config=None)
    stop = StopSignals()
    with redis_for(settings), ExitStack() as stack:
        if args.workers > 1 and MULTIPROC_ENV not in os.environ:
            # the uvicorn workers sum their metrics through files in a directory of their own
            os.environ[MULTIPROC_ENV] = stack.enter_context(private_multiprocess_dir("api"))
        config = uvicorn.Config(
            "cli:create_app_dying_with_parent" if args.workers > 1 else "app:create_app",
            factory=True,
            host=args.host or settings.host,
            port=args.port or settings.port,
            workers=args.workers,
            log_level=settings.log_level.lower(),
            log_config=None,
            ws_max_size=1 << 20,
            # X-Forwarded-For is believed only from PROOFLOOP_TRUSTED_PROXIES (it names the client address
            # that login and register limits count)
            proxy_headers=bool(settings.trusted_proxies),
            forwarded_allow_ips=",".join(settings.trusted_proxies) or None,
            timeout_graceful_shutdown=API_GRACE_SECONDS,
            http=partial(  # type: ignore[arg-type]
                GuardedHttpProtocol,
                header_timeout=settings.header_timeout_seconds,
                max_header_bytes=settings.max_header_bytes,
            ),
            timeout_keep_alive=settings.keep_alive_seconds,
            limit_concurrency=settings.max_connections,
        )
        if args.workers > 1:
            supervisor = _ApiSupervisor(config, sockets=[config.bind_socket()])  # installs its own handlers
            if stop.requested:
                supervisor.should_exit.set()
            supervisor.run()
            return 0
        server = _ApiServer(config)
        stop.on_signal(server.ask_to_exit)
        server.run()
        return 0 if server.started or stop.requested else STARTUP_FAILURE


def create_app_dying_with_parent() -> Starlette:
    """The app in each of `serve --workers N`'s processes, which must not outlive their supervisor."""
    from app import create_app

    die_with_parent()
    return create_app()


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
        "mail",
        "webhooks",
        "--skip-logging",
        "--worker-shutdown-timeout",
        str(int(WORKER_GRACE_SECONDS * 1000)),
    ]


def cmd_worker(args: argparse.Namespace) -> int:
    """Run Dramatiq worker processes: the chain's links and the pump; metrics on WORKER_METRICS_PORT.

    If one of them dies the others are stopped and this command exits non-zero: run it under a supervisor
    that restarts it (`proofloop dev` does, for its own worker).
    """
    from observability.exposition import MULTIPROC_ENV, private_multiprocess_dir, serve_worker_metrics

    settings = get_settings()
    configure_logging(settings)
    stop = StopSignals()  # before any child starts: a signal during start-up still stops every child
    with redis_for(settings), private_multiprocess_dir("worker") as metrics_dir:
        env = dict(os.environ)
        # dramatiq always runs its workers as child processes: they write metric files, this one serves them
        env[MULTIPROC_ENV] = metrics_dir
        serve_worker_metrics(settings.host, settings.worker_metrics_port, metrics_dir)
        if stop.requested:
            return 0
        # in our process group: a SIGKILL to the group ends every process of the worker at once, as a crash
        # would; Dramatiq's processes die with its main process, so killing that one is enough
        dramatiq = Child(
            "dramatiq",
            worker_command(args.processes, args.threads or settings.worker_threads),
            env,
            ROOT,
            own_group=False,
        )
        dramatiq.start()
        while not stop.requested and dramatiq.running():
            stop.wait(0.5)
        code = dramatiq.exit_code()
        if not stop.requested:
            # Dramatiq stops the other processes when one dies; the supervisor restarts the whole command
            log.error("a Dramatiq process died (Dramatiq exited with code %s): exiting non-zero", code)
        stop_children([dramatiq], stop, CHILD_GRACE_SECONDS)
        return 0 if stop.requested else (code or 1)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=0.5):
            return True
    except OSError:
        return False


def _supervise_dev(api: Child, worker: Child, stop: StopSignals, health_url: str) -> int:
    """Run until a stop signal or the API's exit; restart the worker whenever it dies, backing off while it
    keeps dying. Returns the API's exit code if it exited by itself."""
    announced, delay, restart_at = False, RESTART_BACKOFF_SECONDS[0], 0.0
    while not stop.requested:
        if (code := api.exit_code()) is not None:
            log.error("the API exited (code %s): stopping", code)
            return code or 1
        if not announced and _answers(health_url):
            print(
                f"Proofloop is running. GraphiQL: {health_url.removesuffix('/healthz')}/graphql",
                file=sys.stderr,
                flush=True,
            )
            announced = True
        if not worker.running() and not restart_at:
            if time.monotonic() - worker.started_at > RESTART_RESET_SECONDS:
                delay = RESTART_BACKOFF_SECONDS[0]
            log.error("the worker exited (code %s): restarting it in %.0f s", worker.exit_code(), delay)
            restart_at = time.monotonic() + delay
            delay = min(delay * 2, RESTART_BACKOFF_SECONDS[1])
        if restart_at and time.monotonic() >= restart_at:
            worker.start()
            restart_at = 0.0
        stop.wait(0.2)
    return 0


def port_in_use(host: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: only a listener counts
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


# what `proofloop dev` sets unless the environment does: webhooks can be tried against a receiver on this
# machine (production keeps every address rule)
DEV_DEFAULTS = {
    "PROOFLOOP_ENV": "dev",
    "PROOFLOOP_WEBHOOK_ALLOW_INSECURE": "true",
    "PROOFLOOP_DEV_CLOCK": "true",
}


def cmd_dev(args: argparse.Namespace) -> int:
    """Everything on the embedded default: migrations, the API with GraphiQL, and one worker.

    It supervises its own children: a worker that dies is restarted; a stop signal stops them all.
    """
    for name, value in DEV_DEFAULTS.items():
        os.environ.setdefault(name, value)
    get_settings.cache_clear()
    settings = get_settings()
    configure_logging(settings)
    if settings.webhook_allow_insecure:
        log.warning("dev: webhooks may also use http:// receivers on localhost, 127.0.0.1 and [::1]")
    if settings.dev_clock:
        log.warning("dev: the dev clock is on: devTaskAdvance brings a task's next deadline to now")
    host, port = args.host or settings.host, args.port or settings.port
    if port_in_use(host, port):  # before anything starts: a second worker would run on the same data
        print(f"{host}:{port} is already in use (another `make run`?): set PROOFLOOP_PORT", file=sys.stderr)
        return 1
    stop = StopSignals()  # before anything starts: a signal during start-up stops whatever has started
    cmd_migrate(args)
    if stop.requested:
        return 0
    with redis_for(settings):
        if stop.requested:
            return 0
        env = dict(os.environ)
        api = Child(
            "the API", [sys.executable, "-m", "cli", "serve", "--host", host, "--port", str(port)], env, ROOT
        )
        worker = Child("the worker", [sys.executable, "-m", "cli", "worker"], env, ROOT)
        api.start()
        worker.start()
        try:
            return _supervise_dev(api, worker, stop, f"http://{host}:{port}/healthz")
        finally:
            stop_children([api, worker], stop, DEV_GRACE_SECONDS)


def cmd_export_schema(args: argparse.Namespace) -> int:
    """Print the GraphQL schema (SDL) the code defines; `make schema` writes it to schema.graphql."""
    from schema.schema import schema

    sdl = schema.as_str() + "\n"
    if args.output:
        Path(args.output).write_text(sdl)
    else:
        sys.stdout.write(sdl)
    return 0


def cmd_config_doc(args: argparse.Namespace) -> int:
    """Print the settings reference (Markdown) of settings.py; `make docs` writes docs/configuration.md."""
    from settings_doc import render

    text = render()
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Against a running `make run`: two users, a partnership and short tasks producing live events."""
    from demo import run_demo, token_from_mail_dir

    settings = get_settings()
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    return run_demo(
        args.url or f"http://{host}:{settings.port}",
        duration=args.duration,
        mailed_token=token_from_mail_dir(settings.mail_dir),
    )


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
    config_doc = add("config-doc", cmd_config_doc)
    config_doc.add_argument("--output", "-o", help="write to this file instead of stdout")
    demo = add("demo", cmd_demo)
    demo.add_argument("--url", help="a running Proofloop API (default: PROOFLOOP_HOST:PROOFLOOP_PORT)")
    demo.add_argument("--duration", type=float, default=0, help="seconds to run (0: until Ctrl-C)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())

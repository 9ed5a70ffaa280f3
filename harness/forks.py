"""A fork server for the test run: one process per test process that imports the service once and forks
`proofloop serve` and `proofloop worker` from it, as `python -m cli ...` would run them.

Importing the service costs about 2 s of CPU (the schema, the ORM, the media decoders), more than most
tests that start their own API spend on requests; a run starts about a hundred such processes. A forked
command skips the imports and nothing else: it is its own process in its own session (a signal to its
group reaches it alone), with its own environment, log and exit code, and it reads its settings when it
starts, as every command does. Forking after the imports is sound because the service does nothing when
imported (no thread, connection, file or setting is made at import; the fork server checks that no thread
runs before it forks).

A command is forked only when its environment differs from the fork server's in PROOFLOOP_* settings
(and pytest's PYTEST_* variables) alone: anything else (LD_PRELOAD and FAKETIME for a moved clock, PYTHON* variables) is read when an
interpreter starts, so such a command is started afresh. Benchmarks start every process afresh, so what
they measure starts as in production.

The protocol, one JSON object per line: the client sends {"argv", "env", "cwd", "log"}; the server answers
{"started": pid} (or {"failed": message}), and {"exited": pid, "code": code} when it has reaped one, the
code as subprocess reports it (negative for a signal).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import IO, Any, Protocol

# the commands whose start is forked: those the run starts by the dozen (and that start no interpreter
# settings of their own: `serve --workers N` and `dev` start further interpreters, so they gain little);
# `migrate` prepares each test process's template databases, all at the start of the run
FORKED_COMMANDS = frozenset({"serve", "worker", "migrate"})

# how long the harness waits for a command it starts to be ready (a fork server's answer, an API's first
# answer, a worker's "ready"): a start takes 1-3 s on an idle 2-core machine and ten times that at a load of
# 4 per core; PROOFLOOP_TEST_START_SECONDS moves it for a slower machine
START_SECONDS = float(os.environ.get("PROOFLOOP_TEST_START_SECONDS", "120"))


class Started(Protocol):
    """A started command, forked or not: what `subprocess.Popen` and `Forked` both offer."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...


class Forked:
    """A command the fork server forked: the parts of `subprocess.Popen` the harness and tests use."""

    def __init__(self, server: ForkServer, pid: int, args: list[str]) -> None:
        self.server = server
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            code = self.server.wait_exit(self.pid, timeout)
            if code is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self.returncode = code
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # never a signal to a reaped pid, which another process may hold now
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServer:
    """The client side: starts the fork server and asks it for commands, one at a time."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.forks"],
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._requests: IO[bytes] = self.proc.stdin
        self._answers: IO[bytes] = self.proc.stdout
        self._lock = threading.Lock()  # one request at a time: its answer is the next "started"
        self._changed = threading.Condition()
        self._started: list[dict[str, Any]] = []
        self._exits: dict[int, int] = {}
        self._gone = False  # the fork server exited: no exit is reported any more
        self._reader = threading.Thread(target=self._read, name="fork-server", daemon=True)
        self._reader.start()

    def can_fork(self, args: list[str], env: dict[str, str]) -> bool:
        """Whether the command may be forked: one of FORKED_COMMANDS, `serve` in one process, and an
        environment that differs from the fork server's in PROOFLOOP_* settings alone."""
        if not args or args[0] not in FORKED_COMMANDS or self.proc.poll() is not None:
            return False
        if args[0] == "serve" and "--workers" in args and args[args.index("--workers") + 1 :][:1] != ["1"]:
            return False

        def interpreter(e: dict[str, str]) -> dict[str, str]:
            # pytest's own variables change with each test (PYTEST_CURRENT_TEST) and nothing else reads them
            return {k: v for k, v in e.items() if not k.startswith(("PROOFLOOP_", "PYTEST_"))}

        return interpreter(env) == interpreter(self.env)

    def spawn(self, args: list[str], env: dict[str, str], log_path: Path) -> Forked:
        log_path.touch()  # there when this returns, as with Popen: callers read it at once
        request = {"argv": args, "env": env, "cwd": str(self.cwd), "log": str(log_path)}
        with self._lock:
            self._requests.write(json.dumps(request).encode() + b"\n")
            self._requests.flush()
            with self._changed:
                answered = self._changed.wait_for(
                    lambda: self._started or self.proc.poll() is not None, START_SECONDS
                )
                if not answered:
                    raise RuntimeError(f"the fork server did not answer in {START_SECONDS:g} s")
                if not self._started:
                    raise RuntimeError(f"the fork server exited with code {self.proc.poll()}")
                answer = self._started.pop(0)
        if "failed" in answer:
            raise RuntimeError(f"the fork server could not fork {args}: {answer['failed']}")
        return Forked(self, int(answer["started"]), [sys.executable, "-m", "cli", *args])

    def exit_code(self, pid: int) -> int | None:
        with self._changed:
            return self._exits.get(pid)

    def wait_exit(self, pid: int, timeout: float | None) -> int | None:
        with self._changed:
            self._changed.wait_for(lambda: pid in self._exits or self._gone, timeout)
            if pid not in self._exits and self._gone:
                raise RuntimeError(f"the fork server exited before reporting process {pid}")
            return self._exits.get(pid)

    def _read(self) -> None:
        for line in self._answers:
            message = json.loads(line)
            with self._changed:
                if "exited" in message:
                    self._exits[int(message["exited"])] = int(message["code"])
                else:
                    self._started.append(message)
                self._changed.notify_all()
        with self._changed:
            self._gone = True
            self._changed.notify_all()

    def close(self) -> None:
        """Ends the fork server; it kills the groups of the commands still running (a test stops its own)."""
        self._requests.close()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=15)
        self._answers.close()


class Shared:
    """The test process's fork server, started on first use (a run of unit tests never starts one).

    A fork server that fails (it does not answer within START_SECONDS, or it exited) is given up for the
    rest of the process: that command and every later one start afresh, which costs their imports and
    nothing else, instead of each test waiting out the same failure."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd
        self._server: ForkServer | None = None
        self._given_up = False
        self._lock = threading.Lock()

    def fork(self, args: list[str], env: dict[str, str], log_path: Path) -> Forked | None:
        """The command forked, or None where it must start afresh (it cannot be forked, or the fork server
        failed)."""
        with self._lock:
            if self._given_up:
                return None
            if self._server is None:
                self._server = ForkServer(self.env, self.cwd)
            server = self._server
        if not server.can_fork(args, env):
            return None
        try:
            return server.spawn(args, env, log_path)
        except RuntimeError as failure:
            self._give_up(server, failure)
            return None

    def _give_up(self, server: ForkServer, failure: RuntimeError) -> None:
        # it is asked for nothing more, but keeps reporting the exits of the commands it forked (their
        # tests still stop them) until close()
        with self._lock:
            self._given_up = True
        print(
            f"harness: {failure}; this test process starts its commands afresh from now on", file=sys.stderr
        )

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.close()
                self._server = None


def _run_command(request: dict[str, Any], inherited: list[int]) -> int:
    """In the forked child: become `python -m cli <argv>` in a session of its own, and run it."""
    os.setsid()
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd in inherited:
        os.close(fd)
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.close(null)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    import cli

    sys.argv = [cli.__file__, *request["argv"]]
    try:
        code = cli.main(request["argv"])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    return code


# what `serve` imports only once it runs (uvicorn's loop and protocols, the database drivers, the guarded
# HTTP protocol): a tenth of a second of each forked API's start
SERVE_IMPORTS_AT_START = (
    "tortoise.backends.asyncpg",
    "tortoise.backends.sqlite",
    "uvicorn.lifespan.on",
    "uvicorn.loops.auto",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.websockets.websockets_sansio_impl",
    "web.http_protocol",
)


def serve() -> None:
    """The fork server's own loop: requests on stdin, answers on stdout, children reaped on SIGCHLD."""
    import app  # noqa: F401  (what `serve` imports; `worker` needs less)
    import cli  # noqa: F401

    for module in SERVE_IMPORTS_AT_START:
        importlib.import_module(module)

    requests = os.dup(0)
    answers = os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    if threading.active_count() != 1:
        raise SystemExit(f"a thread runs after the imports: {threading.enumerate()}; forking is unsafe")

    woken, wake = os.pipe()
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(requests, selectors.EVENT_READ)
    selector.register(woken, selectors.EVENT_READ)
    children: set[int] = set()
    pending = b""

    def answer(message: dict[str, Any]) -> None:
        os.write(answers, json.dumps(message).encode() + b"\n")

    def reap() -> None:
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            children.discard(pid)
            answer({"exited": pid, "code": os.waitstatus_to_exitcode(status)})

    while True:
        for key, _ in selector.select():
            if key.fd == woken:
                os.read(woken, 4096)
                reap()
                continue
            chunk = os.read(requests, 65536)
            if not chunk:  # the test process is done: nothing it started may outlive it
                for pid in children:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                sys.stderr.flush()
                try:
                    pid = os.fork()
                except OSError as error:
                    answer({"failed": str(error)})
                    continue
                if pid == 0:
                    code = 1
                    try:
                        selector.close()
                        code = _run_command(request, [requests, answers, woken, wake])
                    finally:
                        # the interpreter's own exit, as `python -m cli` ends: exit handlers, then flushed
                        # output
                        try:
                            import atexit

                            atexit._run_exitfuncs()
                            sys.stdout.flush()
                            sys.stderr.flush()
                        finally:
                            os._exit(code)
                children.add(pid)
                answer({"started": pid})
        reap()


if __name__ == "__main__":
    serve()

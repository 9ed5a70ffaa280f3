"""Redis alone at many API processes: the CPU a notice costs when every process pattern-subscribes to every
user's channel, against one SUBSCRIBE per watched user spread over the processes.

Used by bench.live_shards (which runs it on its private redis-server). Each "process" is one raw pub/sub
connection whose bytes a thread reads and discards, so Redis, not a Python client, is what is measured.
"""

from __future__ import annotations

import contextlib
import random
import selectors
import socket
import threading
import time
from dataclasses import dataclass

import redis

from realtime.notices import EVENTS_CHANNEL_PREFIX, events_channel


def _command(*parts: str) -> bytes:
    encoded = [p.encode() for p in parts]
    return b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in encoded)


class Drain:
    """Reads every pub/sub connection until stopped; counts the bytes."""

    def __init__(self, sockets: list[socket.socket]) -> None:
        self.received = 0
        self._stop = threading.Event()
        self._selector = selectors.DefaultSelector()
        for s in sockets:
            s.setblocking(False)
            self._selector.register(s, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.1):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                with contextlib.suppress(BlockingIOError):
                    self.received += len(sock.recv(1 << 20))

    def settle(self) -> None:
        """Until nothing more arrives for a moment."""
        last = -1
        while last != self.received:
            last = self.received
            time.sleep(0.3)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class RedisFanout:
    processes: int
    mode: str
    notices: int
    cpu_ms: float
    delivered_bytes: int
    memory_kib: float  # used_memory grown by the subscriptions (connections included)


def measure(
    port: int, *, processes: int, users: int, watched_share: float, notices: int, mode: str
) -> RedisFanout:
    """`notices` PUBLISHes to random users' channels. `per_user`: each watched user (`watched_share` of
    them) is held by one of the connections; `all`: every connection holds the pattern."""
    rng = random.Random(processes)
    client = redis.Redis(port=port)
    memory_before = int(client.info("memory")["used_memory"])
    sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(processes)]
    ids = [f"user-{n}" for n in range(users)]
    if mode == "all":
        for s in sockets:
            s.sendall(_command("PSUBSCRIBE", f"{EVENTS_CHANNEL_PREFIX}*"))
    else:
        watched = rng.sample(ids, int(users * watched_share))
        for index, s in enumerate(sockets):
            mine = watched[index::processes]
            for start in range(0, len(mine), 500):
                s.sendall(_command("SUBSCRIBE", *(events_channel(u) for u in mine[start : start + 500])))
    drain = Drain(sockets)
    drain.settle()
    memory_kib = (int(client.info("memory")["used_memory"]) - memory_before) / 1024
    before_bytes = drain.received
    cpu = client.info("cpu")
    cpu_before = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
    targets = [rng.choice(ids) for _ in range(notices)]
    for start in range(0, notices, 1000):
        with client.pipeline(transaction=False) as pipe:
            for user_id in targets[start : start + 1000]:
                pipe.publish(events_channel(user_id), "1")
            pipe.execute()
    drain.settle()
    cpu = client.info("cpu")
    cpu_ms = (float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]) - cpu_before) * 1000
    delivered = drain.received - before_bytes
    drain.stop()
    for s in sockets:
        s.close()
    return RedisFanout(processes, mode, notices, cpu_ms, delivered, memory_kib)

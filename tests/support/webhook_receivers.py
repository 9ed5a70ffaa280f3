"""A hostile webhook receiver on this machine: answers `HTTP/1.1 200 OK` at once, then trickles one header
byte every 2 s and never finishes. It records each request's delivery id, and how many of its
connections were open at once."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

TRICKLE_SECONDS = 2.0
LONGEST_HOLD_SECONDS = 150.0  # the receiver gives up on a connection no client ever closes


@dataclass
class OpenCount:
    """Connections open at once over a group of receivers (one account's), and the most ever."""

    now: int = 0
    most: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def opened(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def closed(self) -> None:
        with self.lock:
            self.now -= 1


class TricklingReceiver:
    def __init__(self, open_count: OpenCount | None = None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks/proofloop"
        self.open_count = open_count or OpenCount()
        self.deliveries: list[tuple[float, str]] = []  # (monotonic arrival, X-Proofloop-Delivery)
        self.stopping = threading.Event()

    def serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        self.open_count.opened()
        try:
            conn.settimeout(TRICKLE_SECONDS)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            self.deliveries.append((time.monotonic(), _delivery_id(head)))
            conn.sendall(b"HTTP/1.1 200 OK\r\n")
            started = time.monotonic()
            while not self.stopping.is_set() and time.monotonic() - started < LONGEST_HOLD_SECONDS:
                try:
                    if not conn.recv(65536):  # the client closed: seen at once, not at the next byte
                        return
                except TimeoutError:
                    conn.sendall(b"X")
        except OSError:
            return
        finally:
            self.open_count.closed()
            conn.close()

    def close(self) -> None:
        self.stopping.set()
        self.listener.close()


def _delivery_id(head: bytes) -> str:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"x-proofloop-delivery":
            return value.strip().decode()
    return ""


@contextmanager
def trickling(count: int, open_count: OpenCount | None = None) -> Iterator[list[TricklingReceiver]]:
    """`count` trickling receivers, serving until the block ends."""
    with ExitStack() as stack:
        receivers = []
        for _ in range(count):
            receiver = TricklingReceiver(open_count)
            threading.Thread(target=receiver.serve, daemon=True).start()
            stack.callback(receiver.close)
            receivers.append(receiver)
        yield receivers

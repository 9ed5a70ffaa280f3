"""Ports for the servers a test or a benchmark starts.

A port the kernel lends (bind to port 0, then close) is free only until that socket closes: another test
process asking the kernel the same way, or any outgoing connection, may take it before the server we start
binds it (a chaos test's API once found another test's mail catcher answering on its port). So ports come
from a band just below the kernel's ephemeral range, which the kernel never hands out on its own, and each
test process owns a slice of that band, taken in turn. A port is handed out only if it can be bound now.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Iterator
from pathlib import Path

_BAND = 15_000  # ports below the ephemeral range used for our servers
_SLICE = 500  # ports per test process: more than any test process holds at once
_XDIST_SLOTS = 16  # slices for pytest-xdist workers gw0..gw15; the rest are for other processes
_LANES = 6  # then one for each lane of harness/run_alone.py


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


# a lane of harness/run_alone.py: runs side by side outside pytest-xdist, each with its own slice
PORT_SLOT = "PROOFLOOP_TEST_PORT_SLOT"


def _slot() -> int:
    lane = os.environ.get(PORT_SLOT, "")
    if lane.isdigit():
        return _XDIST_SLOTS + int(lane)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and worker[2:].isdigit():
        return int(worker[2:]) % _XDIST_SLOTS
    slots = _BAND // _SLICE
    return _XDIST_SLOTS + _LANES + os.getpid() % (slots - _XDIST_SLOTS - _LANES)


def _candidates() -> Iterator[int]:
    low = _ephemeral_low() - _BAND
    if low < 1024:  # no room below the ephemeral range: fall back to what the kernel lends
        while True:
            yield 0
    first = low + _slot() * _SLICE
    # a process a test starts inherits its slot; starting at an offset of its own keeps the two apart
    start = os.getpid() * 97 % _SLICE
    yield from itertools.cycle([*range(first + start, first + _SLICE), *range(first, first + start)])


_ports = _candidates()


def _bindable(port: int) -> int | None:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return None
        bound: int = s.getsockname()[1]
        return bound


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on now, and that no other test process will be given."""
    for _ in range(_SLICE):
        port = _bindable(next(_ports))
        if port is not None:
            return port
    raise RuntimeError("no free port in this process's slice")

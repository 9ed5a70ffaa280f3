"""`PerLoop`: a coordinator made on one event loop is never handed to another, and goes with its loop."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref

import pytest

from services.kit import PerLoop

pytestmark = pytest.mark.unit


class Coordinator:
    """Holds what binds to a loop, as the link sender and the gatherers do."""

    def __init__(self) -> None:
        self.wake = asyncio.Event()
        self.loop = asyncio.get_running_loop()


async def test_one_loop_gets_one_instance() -> None:
    per_loop = PerLoop(Coordinator)
    first = per_loop.get()
    assert per_loop.get() is first
    assert first.loop is asyncio.get_running_loop()


def test_loops_running_at_once_each_get_their_own_and_can_use_it() -> None:
    per_loop = PerLoop(Coordinator)
    both_made = threading.Barrier(2)
    seen: list[Coordinator] = []

    def run() -> None:
        async def use() -> None:
            made = per_loop.get()
            both_made.wait(timeout=5)  # the other loop holds its own at the same moment
            assert per_loop.get() is made
            made.wake.set()
            await asyncio.wait_for(made.wake.wait(), timeout=1)  # bound to this loop: usable here
            seen.append(made)

        asyncio.run(use())

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(seen) == 2
    assert seen[0] is not seen[1]
    assert seen[0].loop is not seen[1].loop


def test_an_instance_goes_once_its_loop_has_closed() -> None:
    """A worker thread Dramatiq restarts runs a new loop: the old loop's coordinator is not kept."""
    per_loop = PerLoop(Coordinator)

    async def make() -> weakref.ref[Coordinator]:
        made = per_loop.get()
        made.wake.set()
        await made.wake.wait()  # a used Event refers to its loop, as a coordinator's tasks do
        return weakref.ref(made)

    first = asyncio.run(make())
    assert first() is not None  # nothing new has asked yet
    second = asyncio.run(make())
    gc.collect()
    assert first() is None
    assert second() is not None


def test_outside_a_running_loop_there_is_none() -> None:
    with pytest.raises(RuntimeError):
        PerLoop(Coordinator).get()

"""The run's files, longest first, so the last file a test process takes is a short one.

`make test` hands whole files to four processes (`--dist loadfile`); each process takes the next file when
it is nearly done with its own. Taken in collection order, a one-minute file that comes last keeps one
process busy while the other three have nothing left. Taken longest first, the processes end within a
short file of each other: on the figures in `file_durations.json`, a schedule of 414 s becomes 381 s, the
tests' total over four.

`file_durations.json` holds each file's seconds (setup, call and teardown of its tests) from a run of the
whole suite; it orders the run and nothing else, so a stale figure costs only some of that gain. A file it
does not know yet goes first: it may be long. Refresh it with
`.venv/bin/pytest -n 4 --dist loadfile --record-file-durations`.
"""

from __future__ import annotations

import json
import os
import random
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("file_durations.json")
RECORD_OPTION = "--record-file-durations"
ORDER_SEED = "PROOFLOOP_TEST_ORDER_SEED"


def add_option(parser: pytest.Parser) -> None:
    parser.addoption(
        RECORD_OPTION,
        action="store_true",
        help=f"write each test file's seconds to {DURATIONS.relative_to(DURATIONS.parents[2])}",
    )


def known_durations() -> dict[str, float]:
    try:
        loaded: dict[str, float] = json.loads(DURATIONS.read_text())
    except FileNotFoundError:
        return {}
    return loaded


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def longest_files_first(items: list[pytest.Item], seed: int) -> None:
    """Reorder `items` in place: files by their known seconds, longest first (unknown ones before all),
    each file's tests in their own order. Each file's seconds are first scaled by a factor between 1/2 and 2
    drawn from `seed`, so files of similar length come in another order in each run (a file that passes
    only after another has run shows up) while the long ones still start early. The same seed gives the
    same order, in every process of the run."""
    known = known_durations()
    draw = random.Random(seed)
    factors = {name: 2 ** draw.uniform(-1, 1) for name in sorted({file_of(item.nodeid) for item in items})}

    def seconds(item: pytest.Item) -> float:
        name = file_of(item.nodeid)
        return known.get(name, float("inf")) * factors[name]

    items.sort(key=lambda item: -seconds(item))


def order_seed(config: pytest.Config) -> int:
    """The run's order seed: PROOFLOOP_TEST_ORDER_SEED when set (to repeat a run's order), else one drawn
    now and handed to the run's other processes through the environment they inherit."""
    chosen = os.environ.get(ORDER_SEED)
    if chosen is None:
        chosen = str(random.SystemRandom().randrange(1_000_000))
        if not hasattr(config, "workerinput"):
            os.environ[ORDER_SEED] = chosen
    return int(chosen)


class Recorder:
    """Sums each file's reports where every report arrives: in the run's one process, or in the xdist
    controller, which receives the reports of all its workers."""

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[file_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):  # an xdist worker: the controller writes the file
            return
        rounded = {name: round(seconds, 1) for name, seconds in sorted(self.seconds.items())}
        DURATIONS.write_text(json.dumps(rounded, indent=1) + "\n")


def configure(config: pytest.Config) -> None:
    order_seed(config)  # drawn now, before pytest-xdist starts the processes that must share it
    if config.getoption(RECORD_OPTION) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(Recorder(), "proofloop-file-durations")

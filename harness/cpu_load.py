"""Every core kept busy, the way CI's neighbours load a shared machine: spinning processes around a block
(tests/chaos under load) or a command (bench/cpu_hog.py)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from contextlib import contextmanager


def _spin() -> None:
    while True:
        pass


@contextmanager
def spinning(per_core: int = 1) -> Iterator[None]:
    """`per_core` spinning processes per core while the block runs."""
    hogs = [
        multiprocessing.Process(target=_spin, daemon=True) for _ in range((os.cpu_count() or 1) * per_core)
    ]
    for hog in hogs:
        hog.start()
    try:
        yield
    finally:
        for hog in hogs:
            hog.terminate()
        for hog in hogs:
            hog.join()

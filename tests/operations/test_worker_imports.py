"""A worker process loads no media decoder: it stores, copies and removes media but never decodes them, and
PyAV, Pillow, NumPy and imagehash are half of what an idle worker would otherwise hold in memory. The
API, which judges proofs, loads them (so the check can see them when they are there)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.proofloop import ROOT

pytestmark = pytest.mark.unit

DECODERS = ("av", "PIL", "numpy", "imagehash")


def decoders_loaded_by(module: str) -> list[str]:
    probe = f"import sys, json, {module}; print(json.dumps([m for m in {DECODERS!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_the_worker_loads_no_media_decoder() -> None:
    assert decoders_loaded_by("actors.worker") == []


def test_the_api_loads_them_to_judge_proofs() -> None:
    assert decoders_loaded_by("app") == list(DECODERS)

"""Installs come from uv.lock: the environment holds exactly the locked versions, the service installs
without the test tools, and the image installs the same lock with the same uv as `make`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = (ROOT / "Makefile").read_text()
LOCK = tomllib.loads((ROOT / "uv.lock").read_text())
UV = ROOT / ".tools" / "bin" / "uv"


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions() -> dict[str, set[str]]:
    """Each package's locked versions: one, or one per Python the lock forks on (numpy 2.5 needs 3.12)."""
    locked: dict[str, set[str]] = {}
    for package in LOCK["package"]:
        if "version" in package:
            locked.setdefault(canonical(package["name"]), set()).add(package["version"])
    return locked


def uv_version() -> str:
    found = re.search(r"^UV_VERSION := (\S+)$", MAKEFILE, re.MULTILINE)
    assert found, "the Makefile pins no UV_VERSION"
    return found.group(1)


@pytest.mark.unit
def test_every_installed_distribution_is_the_locked_version() -> None:
    locked = locked_versions()
    installed = {canonical(d.metadata["Name"]): d.version for d in metadata.distributions()}
    installed.pop("proofloop")
    unlocked = sorted(set(installed) - set(locked))
    assert not unlocked, f"installed but not in uv.lock: {unlocked}"
    moved = {
        name: (version, locked[name]) for name, version in installed.items() if version not in locked[name]
    }
    assert not moved, f"installed (left) differs from uv.lock (right): {moved}"


@pytest.mark.unit
def test_the_image_installs_the_lock_with_the_makefiles_uv() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert f"uv=={uv_version()}" in dockerfile
    assert "COPY pyproject.toml uv.lock" in dockerfile
    installs = re.findall(r"^RUN .*\b(uv sync|pip install)\b.*$", dockerfile, re.MULTILINE)
    syncs = re.findall(r"^RUN uv sync .*$", dockerfile, re.MULTILINE)
    assert syncs and all("--locked" in line for line in syncs), syncs
    assert installs.count("pip install") == 1, "pip installs uv alone; everything else comes from the lock"


def test_the_service_installs_without_the_test_tools(tmp_path: Path) -> None:
    """`make run`'s install: the lock's runtime dependencies, none of the `dev` extra."""
    assert UV.exists(), f"{UV} is missing: `make install` puts it there"
    venv = tmp_path / "venv"
    env = {**os.environ, "UV_PROJECT_ENVIRONMENT": str(venv), "UV_PYTHON_DOWNLOADS": "never"}
    env.pop("VIRTUAL_ENV", None)
    subprocess.run(
        [str(UV), "sync", "--locked", "--no-install-project", "--quiet", "--python", sys.executable],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=300,
    )
    listed = subprocess.run(
        [str(UV), "pip", "list", "--python", str(venv / "bin" / "python"), "--format", "freeze"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    names = {canonical(line.split("==")[0]) for line in listed.splitlines() if "==" in line}
    assert {"strawberry-graphql", "tortoise-orm", "dramatiq", "uvicorn"} <= names
    assert not names & {"pytest", "mypy", "ruff", "moto", "selenium", "hypothesis"}, names

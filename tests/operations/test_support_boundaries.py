"""Benchmarks and the harness they share with the tests import nothing from tests/, and the service imports
neither: a benchmark runs from a checkout without the test suite's modules, and no test helper reaches
production code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SERVICE = (
    *("actors", "models", "observability", "realtime", "resolvers", "rules", "schema", "services"),
    *("storage", "web", "app.py", "cli.py", "demo.py", "policies.py", "runtime.py", "settings.py"),
)


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def modules_of(*names: str) -> list[Path]:
    paths: list[Path] = []
    for name in names:
        target = ROOT / name
        paths.extend(sorted(target.rglob("*.py")) if target.is_dir() else [target])
    return [p for p in paths if "migrations" not in p.parts]


def importers(paths: list[Path], forbidden: set[str]) -> list[str]:
    return [
        f"{p.relative_to(ROOT)}: {sorted(imported_roots(p) & forbidden)}"
        for p in paths
        if imported_roots(p) & forbidden
    ]


def test_bench_and_the_harness_import_nothing_from_tests() -> None:
    assert importers(modules_of("bench", "harness"), {"tests"}) == []


def test_the_service_imports_no_harness_bench_or_tests() -> None:
    assert importers(modules_of(*SERVICE), {"tests", "harness", "bench"}) == []


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\nfrom tests.support import x\nfrom . import y\n")
    assert imported_roots(module) == {"os", "tests"}

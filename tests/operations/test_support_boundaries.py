"""Benchmarks and the harness they share with the tests import nothing from tests/, and the service imports
neither: a benchmark runs from a checkout without the test suite's modules, and no test helper reaches
production code. Inside tests/, what is shared lives in tests/support/: a test module imports no other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SERVICE = (
    *("actors", "models", "observability", "realtime", "resolvers", "rules", "schema", "services"),
    *("storage", "web", "app.py", "cli.py", "demo.py", "policies", "runtime.py", "settings.py"),
)


def imported_modules(path: Path) -> set[str]:
    """The absolute modules `path` imports (relative imports are left out: the suite uses none)."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


def imported_roots(path: Path) -> set[str]:
    return {module.split(".")[0] for module in imported_modules(path)}


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


def outside_support(module: str) -> bool:
    return module.startswith("tests.") and not (
        module == "tests.support" or module.startswith("tests.support.")
    )


def test_tests_share_helpers_only_through_tests_support() -> None:
    modules = [p for p in sorted((ROOT / "tests").rglob("*.py")) if "node_modules" not in p.parts]
    crossing = [
        f"{p.relative_to(ROOT)}: {sorted(filter(outside_support, imported_modules(p)))}"
        for p in modules
        if any(map(outside_support, imported_modules(p)))
    ]
    assert crossing == []


def test_the_check_sees_a_test_module_imported_by_another(tmp_path: Path) -> None:
    module = tmp_path / "test_m.py"
    module.write_text(
        "from tests.support.live import x\nfrom tests.chain.test_chain import y\nimport tests.support\n"
    )
    assert sorted(filter(outside_support, imported_modules(module))) == ["tests.chain.test_chain"]


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\nfrom tests.support import x\nfrom . import y\n")
    assert imported_roots(module) == {"os", "tests"}

"""The schema change policy, checked (docs/schema/changes.md): nothing a released client uses breaks.

`schema.graphql` is compared with the last released schema (docs/schema/released.graphql) by
`@graphql-inspector/cli` (pinned in tests/clients): any breaking change fails, except the removal of a field
the released schema had already deprecated; and such a removal fails too while the date its deprecation
reason promised ("kept until YYYY-MM-DD") has not passed.

    python -m harness.schema_changes [--released PATH] [--current PATH]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

from graphql import GraphQLInputObjectType, GraphQLInterfaceType, GraphQLObjectType, build_schema

from harness.proofloop import ROOT

RELEASED = ROOT / "docs" / "schema" / "released.graphql"
CURRENT = ROOT / "schema.graphql"
INSPECTOR = ROOT / "tests" / "clients" / "node_modules" / ".bin" / "graphql-inspector"
_KEPT_UNTIL = re.compile(r"kept until (\d{4}-\d{2}-\d{2})")


def breaking_changes(released: Path, current: Path, inspector: Path = INSPECTOR) -> list[str]:
    """What graphql-inspector calls breaking, a removal of an already deprecated field aside."""
    if not inspector.exists():
        raise FileNotFoundError(f"{inspector} is not installed: run `make install` (it needs npm)")
    done = subprocess.run(
        [str(inspector), "diff", str(released), str(current), "--rule", "suppressRemovalOfDeprecatedField"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"},
    )
    if done.returncode == 0:
        return []
    lines = [line for line in (done.stdout + done.stderr).splitlines() if "✖" in line or "error" in line]
    return lines or [f"graphql-inspector failed ({done.returncode}): {done.stdout}{done.stderr}"]


def early_removals(released: Path, current: Path, today: date) -> list[str]:
    """Deprecated fields removed before the date their deprecation promised to keep them until."""
    before, after = build_schema(released.read_text()), build_schema(current.read_text())
    found: list[str] = []
    for name, kind in before.type_map.items():
        if name.startswith("__") or not isinstance(
            kind, GraphQLObjectType | GraphQLInterfaceType | GraphQLInputObjectType
        ):
            continue
        now = after.type_map.get(name)
        kept = getattr(now, "fields", {}) if now is not None else {}
        for field_name, field in kind.fields.items():
            reason = getattr(field, "deprecation_reason", None) or ""
            promise = _KEPT_UNTIL.search(reason)
            if field_name not in kept and promise and date.fromisoformat(promise.group(1)) >= today:
                found.append(
                    f"{name}.{field_name} was removed before {promise.group(1)}, as its deprecation promised"
                )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--released", type=Path, default=RELEASED)
    parser.add_argument("--current", type=Path, default=CURRENT)
    args = parser.parse_args(argv)
    problems = breaking_changes(args.released, args.current)
    problems += early_removals(args.released, args.current, datetime.now(UTC).date())
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(
            "schema.graphql breaks what released clients use: deprecate first (docs/schema/changes.md)",
            file=sys.stderr,
        )
        return 1
    print(f"schema changes since {args.released.name}: none breaking")
    return 0


if __name__ == "__main__":
    sys.exit(main())

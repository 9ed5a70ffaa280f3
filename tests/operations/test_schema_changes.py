"""The schema change policy can fail: graphql-inspector (as `make test` runs it) refuses a schema that drops
a field released clients may use, lets a field go once it was deprecated, and the date a deprecation
promised holds the field until then."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from graphql import GraphQLObjectType, build_schema, print_schema

from harness.schema_changes import CURRENT, INSPECTOR, RELEASED, breaking_changes, early_removals

needs_inspector = pytest.mark.skipif(not INSPECTOR.exists(), reason="graphql-inspector needs npm")


def without_field(sdl: str, type_name: str, field_name: str) -> str:
    schema = build_schema(sdl)
    kind = schema.type_map[type_name]
    assert isinstance(kind, GraphQLObjectType)
    del kind.fields[field_name]
    return print_schema(schema)


def deprecated(sdl: str, type_name: str, field_name: str, until: str) -> str:
    schema = build_schema(sdl)
    kind = schema.type_map[type_name]
    assert isinstance(kind, GraphQLObjectType)
    kind.fields[
        field_name
    ].deprecation_reason = f"use something else; deprecated 2026-01-01, kept until {until}"
    return print_schema(schema)


@needs_inspector
def test_the_committed_schema_breaks_nothing_released() -> None:
    assert breaking_changes(RELEASED, CURRENT) == []


@needs_inspector
def test_removing_a_field_that_was_not_deprecated_fails(tmp_path: Path) -> None:
    current = tmp_path / "schema.graphql"
    current.write_text(without_field(CURRENT.read_text(), "Task", "title"))
    problems = breaking_changes(RELEASED, current)
    assert any("title" in p for p in problems), problems


@needs_inspector
def test_removing_a_field_deprecated_in_the_release_passes_once_its_date_is_past(tmp_path: Path) -> None:
    released, current = tmp_path / "released.graphql", tmp_path / "schema.graphql"
    released.write_text(deprecated(CURRENT.read_text(), "Task", "title", until="2027-06-30"))
    current.write_text(without_field(CURRENT.read_text(), "Task", "title"))
    assert breaking_changes(released, current) == []
    assert early_removals(released, current, date(2027, 7, 1)) == []
    [early] = early_removals(released, current, date(2027, 6, 30))
    assert "Task.title" in early and "2027-06-30" in early

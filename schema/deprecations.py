"""Deprecation reasons, in the one form the schema change policy reads (docs/schema/changes.md).

A reason names the replacement, the day of the deprecation and the day until which the name is kept;
harness/schema_changes.py refuses a removal before that day.
"""

from __future__ import annotations

DEPRECATED_ON = "2026-12-07"
REMOVED_AFTER = "2027-06-30"  # at least six months after the deprecation


def replaced_by(name: str, why: str = "input and a payload with userErrors") -> str:
    """The deprecation reason of a name that `name` replaces."""
    return f"use {name} ({why}); deprecated {DEPRECATED_ON}, kept until {REMOVED_AFTER}"


def list_replaced_by(connection: str) -> str:
    """The deprecation reason of a bare list that the connection `connection` replaces."""
    return replaced_by(connection, "a connection: paged both ways, with totalCount")

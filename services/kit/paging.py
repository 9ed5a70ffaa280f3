"""Relay paging, one rule for every connection: keyset on a stable order, both directions, opaque cursors.

A `Keyset` names a list's order (unique: its last key is the row id or another unique column) and turns a
row into a cursor and back. A `PageRequest` is `first`/`after` (forward) or `last`/`before` (backward), at
most MAX_PAGE rows; `after` and `before` bound either direction. A page reads one row more than asked, in
the direction it pages, so it knows whether another page follows without counting; the bound it started
from tells that rows lie on the other side (the cursor's own row does).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar
from uuid import UUID

from tortoise.expressions import Q
from tortoise.models import Model
from tortoise.queryset import QuerySet

from services.kit.errors import BadInput

MAX_PAGE = 100
# a cursor's integer beyond a BIGINT names no row and must not reach the database
MAX_INTEGER = 2**63 - 1

Row = TypeVar("Row")
M = TypeVar("M", bound=Model)


def check_page_size(size: int, field: str = "first") -> int:
    """BAD_USER_INPUT (on `field`) for a page size outside 0..MAX_PAGE."""
    if not 0 <= size <= MAX_PAGE:
        raise BadInput(field, f"must be between 0 and {MAX_PAGE}")
    return size


def parse_instant(text: str) -> datetime:
    at = datetime.fromisoformat(text)
    if at.tzinfo is None:
        raise ValueError("an instant without an offset")
    try:
        return at.astimezone(UTC)  # the database compares in UTC: year 9999 at -14:00 has no UTC instant
    except OverflowError:
        raise ValueError("an instant beyond the calendar") from None


def parse_uuid(text: str) -> str:
    return str(UUID(text))  # the canonical form: the database takes no "urn:uuid:" prefix


def parse_integer(text: str) -> int:
    digits = text.removeprefix("-")
    if not (digits.isascii() and digits.isdigit()) or len(digits) > len(str(MAX_INTEGER)):
        raise ValueError("not an integer")
    if not -MAX_INTEGER - 1 <= int(text) <= MAX_INTEGER:
        raise ValueError("beyond a BIGINT")
    return int(text)


@dataclass(frozen=True)
class SortKey:
    """One column of a keyset order, with how its value is read back from a cursor."""

    field: str
    parse: Callable[[str], Any]
    descending: bool = False


@dataclass(frozen=True)
class Keyset:
    """A list's stable order; `kind` keeps one list's cursors from being taken by another."""

    kind: str
    keys: tuple[SortKey, ...]

    def cursor(self, row: object) -> str:
        values = [_text(getattr(row, key.field)) for key in self.keys]
        return base64.urlsafe_b64encode("|".join([self.kind, *values]).encode()).decode().rstrip("=")

    def decode(self, cursor: str, field: str) -> tuple[Any, ...]:
        """A cursor's key values; BAD_USER_INPUT (on `field`) for anything this list did not issue."""
        try:
            text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
            kind, *values = text.split("|")
            if kind != self.kind or len(values) != len(self.keys):
                raise ValueError("another list's cursor")
            return tuple(key.parse(value) for key, value in zip(self.keys, values, strict=True))
        except (ValueError, UnicodeDecodeError, binascii.Error):
            raise BadInput(field, "is not a cursor this API issued") from None

    def order(self, *, reverse: bool = False) -> list[str]:
        return [f"-{k.field}" if k.descending != reverse else k.field for k in self.keys]

    def beyond(self, values: tuple[Any, ...], *, forward: bool) -> Q:
        """Rows strictly after `values` in this order (forward), or strictly before them."""
        clauses = []
        for n, key in enumerate(self.keys):
            ties = {k.field: v for k, v in zip(self.keys[:n], values[:n], strict=True)}
            later = "lt" if key.descending == forward else "gt"
            clauses.append(Q(**ties, **{f"{key.field}__{later}": values[n]}))
        return Q(*clauses, join_type=Q.OR)

    def compare(self, row: object, values: tuple[Any, ...]) -> int:
        """-1, 0 or 1 as `row` comes before, at or after `values` in this order."""
        for key, value in zip(self.keys, values, strict=True):
            mine = _comparable(getattr(row, key.field), key)
            if mine != value:
                return (-1 if mine < value else 1) * (-1 if key.descending else 1)
        return 0


@dataclass(frozen=True)
class PageRequest:
    """One page asked of a keyset list: `size` rows after `after` and before `before`, from the end
    nearest `after` (forward) or, `backward`, from the end nearest `before`."""

    size: int
    backward: bool = False
    after: tuple[Any, ...] | None = None
    before: tuple[Any, ...] | None = None

    @staticmethod
    def of(
        keyset: Keyset,
        *,
        first: int | None,
        after: str | None,
        last: int | None,
        before: str | None,
        default: int,
    ) -> PageRequest:
        """The request Relay's four arguments ask for (`first` None: not given); one direction at a time."""
        if first is not None and last is not None:
            raise BadInput("last", "cannot be given with first: page one way at a time")
        backward = last is not None
        size = (
            check_page_size(last, "last")
            if last is not None
            else check_page_size(default if first is None else first, "first")
        )
        return PageRequest(
            size=size,
            backward=backward,
            after=None if after is None else keyset.decode(after, "after"),
            before=None if before is None else keyset.decode(before, "before"),
        )


@dataclass(frozen=True)
class Page(Generic[Row]):
    """Rows in the list's order, with what lies beyond each end."""

    rows: list[Row]
    has_next_page: bool
    has_previous_page: bool

    @staticmethod
    def of(fetched: Sequence[Row], request: PageRequest) -> Page[Row]:
        """A page from up to size + 1 rows read in the request's direction (backward: from the end)."""
        more = len(fetched) > request.size
        rows = list(fetched[: request.size])
        if request.backward:
            rows.reverse()
            return Page(rows, has_next_page=request.before is not None, has_previous_page=more)
        return Page(rows, has_next_page=more, has_previous_page=request.after is not None)


def bounded(query: QuerySet[M], keyset: Keyset, request: PageRequest) -> QuerySet[M]:
    """`query` narrowed to the request's bounds, ordered in its direction, one row more than its size."""
    if request.after is not None:
        query = query.filter(keyset.beyond(request.after, forward=True))
    if request.before is not None:
        query = query.filter(keyset.beyond(request.before, forward=False))
    return query.order_by(*keyset.order(reverse=request.backward)).limit(request.size + 1)


async def keyset_page(query: QuerySet[M], keyset: Keyset, request: PageRequest) -> Page[M]:
    """One page of a query's rows: one statement whatever the size."""
    return Page.of(await bounded(query, keyset, request), request)


def page_of_rows(rows: Sequence[Row], keyset: Keyset, request: PageRequest) -> Page[Row]:
    """The same page of a short list already read whole, in the keyset's order (a few rows per parent)."""
    inside = [
        row
        for row in rows
        if (request.after is None or keyset.compare(row, request.after) > 0)
        and (request.before is None or keyset.compare(row, request.before) < 0)
    ]
    ordered = inside[::-1] if request.backward else inside
    return Page.of(ordered[: request.size + 1], request)


def _text(value: object) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _comparable(value: object, key: SortKey) -> Any:
    return key.parse(_text(value))

"""Argument values no field may receive: text the database cannot store, numbers that are not numbers.

PostgreSQL refuses NUL in text and nothing encodes an unpaired surrogate as UTF-8, so such strings would
fail deep in a write (INTERNAL_SERVER_ERROR); a Float literal like 1e400 parses as infinity. Every
argument of every field is checked here, once, before its resolver runs, and refused as BAD_USER_INPUT
naming the argument's path (e.g. `input.title`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from graphql import GraphQLResolveInfo
from strawberry.extensions import SchemaExtension
from strawberry.utils.await_maybe import AwaitableOrValue

from services.kit import BadInput


def refused_text(value: str) -> str | None:
    """Why a string cannot be accepted, or None."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (it contains an unpaired surrogate)"
    return None


def check_argument(value: object, path: str) -> None:
    if isinstance(value, str):
        reason = refused_text(value)
        if reason is not None:
            raise BadInput(path, reason)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise BadInput(path, "must be a finite number")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_argument(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_argument(item, f"{path}.{index}")


class ArgumentGuards(SchemaExtension):
    def resolve(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        *args: str,
        **kwargs: Any,
    ) -> AwaitableOrValue[object]:
        for name, value in kwargs.items():
            check_argument(value, name)
        result: AwaitableOrValue[object] = _next(root, info, *args, **kwargs)
        return result

"""One parse per distinct document: thousands of subscriptions send the same few and share one AST."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from functools import cache, lru_cache
from typing import Any

from graphql import GraphQLError, parse
from strawberry.extensions import SchemaExtension


class SharedParses(SchemaExtension):
    """Like Strawberry's ParserCache, but a document that does not parse is left to Strawberry's own parse
    step, whose syntax error then leaves coded (GRAPHQL_VALIDATION_FAILED) like every other error."""

    def __init__(self, maxsize: int) -> None:
        self._parse: Callable[..., Any] = _cached_parse(maxsize)

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        # a syntax error is left for Strawberry's own parse step, which turns it into a result
        if context.query:
            with suppress(GraphQLError):
                context.graphql_document = self._parse(context.query, **context.parse_options)
        yield


@cache
def _cached_parse(maxsize: int) -> Callable[..., Any]:
    # one cache per size for the process: each request builds its own extension instance
    return lru_cache(maxsize=maxsize)(parse)

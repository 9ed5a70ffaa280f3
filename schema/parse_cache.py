"""One parse per distinct document: thousands of subscriptions send the same few, and share one AST.
(One validation per distinct valid document: schema/shared_validation.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from functools import lru_cache

from graphql import DocumentNode, GraphQLError, OperationType, get_operation_ast, parse
from strawberry.extensions import SchemaExtension

PARSED_DOCUMENTS = 256
cached_parse = lru_cache(maxsize=PARSED_DOCUMENTS)(parse)


class SharedParses(SchemaExtension):
    """Like Strawberry's ParserCache, but a document that does not parse is left to Strawberry's own parse
    step, whose syntax error then leaves coded (GRAPHQL_VALIDATION_FAILED) like every other error."""

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        # a syntax error is left for Strawberry's own parse step, which turns it into a result
        if context.query:
            with suppress(GraphQLError):
                context.graphql_document = cached_parse(context.query, **context.parse_options)
        yield


def is_subscription(query: object, operation_name: object = None) -> bool:
    """Whether a document's chosen operation is a subscription (False when it does not parse: the normal
    path reports that)."""
    if not isinstance(query, str):
        return False
    try:
        document: DocumentNode = cached_parse(query)
    except GraphQLError:
        return False
    name = operation_name if isinstance(operation_name, str) else None
    operation = get_operation_ast(document, name)
    return operation is not None and operation.operation is OperationType.SUBSCRIPTION

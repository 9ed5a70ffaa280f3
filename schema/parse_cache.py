"""One parse per distinct document, and one validation per distinct valid document and variables: thousands
of subscriptions send the same few, and share one AST and one verdict."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import suppress
from functools import lru_cache

from graphql import DocumentNode, GraphQLError, OperationType, get_operation_ast, parse
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext

PARSED_DOCUMENTS = 256
VALID_DOCUMENTS = 256
VALID_KEY_CHARS = 16384  # a larger document or variables is validated each time, not kept
cached_parse = lru_cache(maxsize=PARSED_DOCUMENTS)(parse)
# (document, variables, cost budget) found valid, most recently used last; only valid ones are kept, so no
# error object is ever shared between requests
_valid: OrderedDict[tuple[str, str, int | None], None] = OrderedDict()


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


class SharedValidations(SchemaExtension):
    """Validates a document once per distinct variables (the cost rule reads their values) and cost
    budget; every other rule reads the document alone. A burst of identical subscriptions costs one."""

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        key = _validation_key(context)
        if key is not None and key in _valid:
            _valid.move_to_end(key)
            context.pre_execution_errors = []  # Strawberry's validation step then does not run
        yield
        if key is not None and context.pre_execution_errors == []:
            _valid[key] = None
            if len(_valid) > VALID_DOCUMENTS:
                _valid.popitem(last=False)


def _validation_key(context: ExecutionContext) -> tuple[str, str, int | None] | None:
    if not context.query:
        return None
    try:  # uploads and other non-JSON values are validated each time
        variables = json.dumps(context.variables or {}, sort_keys=True)
    except (TypeError, ValueError):
        return None
    if len(context.query) + len(variables) > VALID_KEY_CHARS:
        return None
    budget: int | None = getattr(getattr(context.context, "settings", None), "max_query_cost", None)
    return context.query, variables, budget


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

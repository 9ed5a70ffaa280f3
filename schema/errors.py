"""Errors as the contract shows them: a code in extensions, and nothing about the inside.

Our own errors (services.kit.errors) keep their message and code; variable coercion failures become
BAD_USER_INPUT naming the variable; other document errors become GRAPHQL_VALIDATION_FAILED; an error that
says the database or Redis did not answer becomes SERVICE_UNAVAILABLE (counted by its outage, not logged
one by one); anything else is masked as INTERNAL_SERVER_ERROR. Every error is logged once, never with the
document or its variables: client mistakes at INFO, real bugs at ERROR with their traceback.
"""

from __future__ import annotations

import logging
import re

import strawberry
from graphql.error import GraphQLError
from graphql.language import (
    ArgumentNode,
    ListValueNode,
    ObjectValueNode,
    ValueNode,
    VariableDefinitionNode,
    Visitor,
    parse,
    visit,
)
from strawberry.exceptions import MissingQueryError
from strawberry.extensions import MaskErrors
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionContext

from observability.outages import Dependency, outage, unreachable
from schema.scalars import InvalidDateTime
from services.kit import BadInput, ProofloopError, RateLimited, ServiceUnavailable

log = logging.getLogger("proofloop.graphql")

INTERNAL_MESSAGE = "Internal server error."
INTERNAL = "INTERNAL_SERVER_ERROR"
UNAVAILABLE = ServiceUnavailable.code
# a document that cannot run as sent (no operation, or one this transport does not carry)
DOCUMENT_ERRORS = (GraphQLError, MissingQueryError, CannotGetOperationTypeError, InvalidOperationTypeError)
# graphql-core: "Variable '$input' has invalid value at .gps.radiusMeters: Float cannot represent ..."
_VARIABLE = re.compile(r"Variable '\$(?P<name>\w+)' has invalid value(?: at (?P<path>[^:\s]+))?")


def _rebuilt(error: GraphQLError, message: str, extensions: dict[str, object]) -> GraphQLError:
    return GraphQLError(
        message=message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=None,
        extensions=extensions,
    )


def _innermost(error: BaseException | None) -> BaseException | None:
    # graphql-core wraps resolver errors in GraphQLError(original_error=GraphQLError(original_error=...))
    while isinstance(error, GraphQLError) and error.original_error is not None:
        error = error.original_error
    return error


def _coerced_variable(error: GraphQLError) -> str | None:
    """The variable a coercion error is about (graphql-core points it at the variable's definition)."""
    node = error.nodes[0] if error.nodes else None
    return node.variable.name.value if isinstance(node, VariableDefinitionNode) else None


def _path_to(value: ValueNode, start: int, path: str) -> str | None:
    if value.loc is not None and value.loc.start == start:
        return path
    children: list[tuple[str, ValueNode]] = []
    if isinstance(value, ObjectValueNode):
        children = [(field.name.value, field.value) for field in value.fields]
    elif isinstance(value, ListValueNode):
        children = [(str(index), item) for index, item in enumerate(value.values)]
    for name, child in children:
        found = _path_to(child, start, f"{path}.{name}")
        if found is not None:
            return found
    return None


class _ArgumentPaths(Visitor):
    def __init__(self, start: int) -> None:
        super().__init__()
        self.start = start
        self.found: str | None = None

    def enter_argument(self, node: ArgumentNode, *_: object) -> None:
        self.found = self.found or _path_to(node.value, self.start, node.name.value)


def _literal_field(error: GraphQLError) -> str | None:
    """Where in the document a literal the scalar refused sits: `input.schedule.startsAt`."""
    node = error.nodes[0] if error.nodes else None
    if node is None or node.loc is None or error.source is None:
        return None
    paths = _ArgumentPaths(node.loc.start)
    visit(parse(error.source), paths)  # only on this error's path: the document passed the size checks
    return paths.found


def unavailable(dependency: Dependency) -> ServiceUnavailable:
    """The refusal while `dependency` does not answer: retry after the outage probe's next look."""
    retry = outage(dependency).retry_after_seconds
    return ServiceUnavailable(f"the {dependency} does not answer; retry in {retry} s", retry)


def unavailable_after(error: BaseException, operation: str) -> ServiceUnavailable | None:
    """The refusal for an error that says a dependency did not answer (counted by its outage), or None."""
    dependency = unreachable(error)
    if dependency is None:
        return None
    outage(dependency).failed(operation, error)
    return unavailable(dependency)


def coded_error(error: GraphQLError) -> GraphQLError:
    original = _innermost(error.original_error)
    variable = _coerced_variable(error)
    dependency = unreachable(original) if original is not None else None
    if dependency is not None:
        original = unavailable(dependency)
    if isinstance(original, BadInput):
        return _rebuilt(error, original.message, {"code": original.code, "field": original.field})
    if isinstance(original, RateLimited | ServiceUnavailable) and original.retry_after_seconds is not None:
        retry = {"code": original.code, "retryAfterSeconds": original.retry_after_seconds}
        return _rebuilt(error, original.message, retry)
    if isinstance(original, ProofloopError):
        reason = {"reason": original.reason} if original.reason else {}
        return _rebuilt(error, original.message, {"code": original.code, **reason})
    coerced = isinstance(error.original_error, GraphQLError) and (
        variable is not None or _VARIABLE.match(error.message) is not None
    )
    if isinstance(original, InvalidDateTime) and variable is None and not _VARIABLE.match(error.message):
        field = _literal_field(error)
        return _rebuilt(
            error, error.message, {"code": "BAD_USER_INPUT", **({"field": field} if field else {})}
        )
    if isinstance(original, InvalidDateTime) or coerced:
        # a variable that does not fit its type: the innermost cause of a coercion error is a GraphQLError
        return _rebuilt(error, error.message, _variable_error_extensions(error.message, variable))
    if original is None or isinstance(original, DOCUMENT_ERRORS):
        code = (error.extensions or {}).get("code") or "GRAPHQL_VALIDATION_FAILED"
        return _rebuilt(error, error.message, {"code": code})
    return _rebuilt(error, INTERNAL_MESSAGE, {"code": INTERNAL})


def _variable_error_extensions(message: str, variable: str | None) -> dict[str, object]:
    """BAD_USER_INPUT naming the variable, and the path inside it when graphql-core's message names one."""
    extensions: dict[str, object] = {"code": "BAD_USER_INPUT"}
    named = _VARIABLE.match(message)
    if named is not None:
        path = re.sub(r"\[(\d+)\]", r".\1", named.group("path") or "")  # [0].x -> .0.x
        extensions["field"] = named.group("name") + path
    elif variable is not None:
        extensions["field"] = variable
    return extensions


def log_error(error: GraphQLError, operation_name: str | None) -> None:
    """One line per error: its code, field and path; a traceback only for a real bug; an outage's error
    only counted by its outage."""
    original = _innermost(error.original_error)
    dependency = unreachable(original) if original is not None else None
    if original is not None and dependency is not None:
        outage(dependency).failed(f"graphql {operation_name or 'operation'}", original)
        return
    shown = coded_error(error)
    code = (shown.extensions or {}).get("code")
    where = {"operation": operation_name, "path": error.path, "field": (shown.extensions or {}).get("field")}
    if code == INTERNAL:
        log.error("unexpected error %s", where, exc_info=_innermost(error.original_error) or error)
    else:
        log.info("client error %s %s", code, where)


def coded_errors(errors: list[GraphQLError]) -> list[GraphQLError]:
    return [coded_error(error) for error in errors]


class ErrorCodes(MaskErrors):
    """Every error leaves with a contract code; unexpected ones leave with nothing else."""

    def _process_errors(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        return coded_errors(errors)


class LoggedErrorsSchema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        # Strawberry's logs every error at ERROR with the document's source: literals (a password) included
        operation = execution_context.operation_name if execution_context is not None else None
        for error in errors:
            log_error(error, operation)

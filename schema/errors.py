"""Errors as the contract shows them: a code in extensions, and nothing about the inside.

Our own errors (services.errors) keep their message and code; document errors become
GRAPHQL_VALIDATION_FAILED; anything else is logged and masked as INTERNAL_SERVER_ERROR.
"""

from __future__ import annotations

import logging
import re

from graphql.error import GraphQLError
from strawberry.extensions import MaskErrors

from schema.scalars import InvalidDateTime
from services.errors import BadInput, ProofloopError

log = logging.getLogger("proofloop.graphql")

INTERNAL_MESSAGE = "Internal server error."
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


def coded_error(error: GraphQLError) -> GraphQLError:
    original = _innermost(error.original_error)
    if isinstance(original, BadInput):
        return _rebuilt(error, original.message, {"code": original.code, "field": original.field})
    if isinstance(original, ProofloopError):
        return _rebuilt(error, original.message, {"code": original.code})
    if isinstance(original, InvalidDateTime):
        return _rebuilt(error, error.message, {"code": "BAD_USER_INPUT"})
    if isinstance(original, GraphQLError):
        # a variable's value graphql-core refused (wrong type, out of range, missing): the client's mistake
        return _rebuilt(error, error.message, _variable_error_extensions(error.message))
    if original is None:
        code = (error.extensions or {}).get("code") or "GRAPHQL_VALIDATION_FAILED"
        return _rebuilt(error, error.message, {"code": code})
    log.error("unexpected error in %s", error.path, exc_info=original)
    return _rebuilt(error, INTERNAL_MESSAGE, {"code": "INTERNAL_SERVER_ERROR"})


def _variable_error_extensions(message: str) -> dict[str, object]:
    """BAD_USER_INPUT naming the variable (and the path inside it) when graphql-core's message names one."""
    named = _VARIABLE.match(message)
    if named is None:
        return {"code": "GRAPHQL_VALIDATION_FAILED"}
    path = re.sub(r"\[(\d+)\]", r".\1", named.group("path") or "")  # [0].x -> .0.x
    return {"code": "BAD_USER_INPUT", "field": named.group("name") + path}


class ErrorCodes(MaskErrors):
    """Every error leaves with a contract code; unexpected ones leave with nothing else."""

    def _process_errors(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        return [coded_error(error) for error in errors]

"""Errors as the contract shows them: a code in extensions, and nothing about the inside.

Our own errors (services.errors) keep their message and code; document errors become
GRAPHQL_VALIDATION_FAILED; anything else is logged and masked as INTERNAL_SERVER_ERROR.
"""

from __future__ import annotations

import logging

from graphql.error import GraphQLError
from strawberry.extensions import MaskErrors

from schema.scalars import InvalidDateTime
from services.errors import BadInput, ProofloopError, RateLimited

log = logging.getLogger("proofloop.graphql")

INTERNAL_MESSAGE = "Internal server error."


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
    if isinstance(original, RateLimited) and original.retry_after_seconds is not None:
        extensions: dict[str, object] = {"code": original.code}
        extensions["retryAfterSeconds"] = original.retry_after_seconds
        return _rebuilt(error, original.message, extensions)
    if isinstance(original, ProofloopError):
        return _rebuilt(error, original.message, {"code": original.code})
    if isinstance(original, InvalidDateTime):
        return _rebuilt(error, error.message, {"code": "BAD_USER_INPUT"})
    if original is None:
        code = (error.extensions or {}).get("code") or "GRAPHQL_VALIDATION_FAILED"
        return _rebuilt(error, error.message, {"code": code})
    log.error("unexpected error in %s", error.path, exc_info=original)
    return _rebuilt(error, INTERNAL_MESSAGE, {"code": "INTERNAL_SERVER_ERROR"})


class ErrorCodes(MaskErrors):
    """Every error leaves with a contract code; unexpected ones leave with nothing else."""

    def _process_errors(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        return [coded_error(error) for error in errors]

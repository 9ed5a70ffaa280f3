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


class ErrorLogLines(logging.Filter):
    """Strawberry logs each error of an operation at ERROR with the document's source around it (literals,
    passwords included). Rewrite those records: expected errors at INFO with code, path and our own message
    only (a document error's message can quote a variable's value), unexpected ones keep their traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.msg
        if not isinstance(error, GraphQLError):
            return True
        original = _innermost(error.original_error)
        if isinstance(original, ProofloopError):
            record.msg, record.args = "%s at %s: %s", (original.code, error.path, original.message)
        elif original is None or isinstance(original, InvalidDateTime):
            record.msg, record.args = "%s at %s", ("GRAPHQL_VALIDATION_FAILED", error.path)
        else:
            record.msg, record.args = "INTERNAL_SERVER_ERROR at %s", (error.path,)
            return True
        record.levelno, record.levelname, record.exc_info, record.exc_text = logging.INFO, "INFO", None, None
        return True


class ErrorCodes(MaskErrors):
    """Every error leaves with a contract code; unexpected ones leave with nothing else."""

    def _process_errors(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        return [coded_error(error) for error in errors]

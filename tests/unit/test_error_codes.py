"""What a client sees of an error: the contract's code, and nothing about the inside."""

from __future__ import annotations

from graphql import GraphQLError

from schema.errors import INTERNAL_MESSAGE, coded_error
from schema.scalars import InvalidDateTime
from services.errors import BadInput, Conflict


def _raised_in_resolver(exc: Exception) -> GraphQLError:
    return GraphQLError("whatever the resolver said", path=["createTask"], original_error=exc)


def test_unexpected_errors_are_masked() -> None:
    leaked = _raised_in_resolver(RuntimeError('relation "tasks" does not exist at /srv/app.py:12'))
    shown = coded_error(leaked)
    assert shown.message == INTERNAL_MESSAGE
    assert shown.extensions == {"code": "INTERNAL_SERVER_ERROR"}
    assert shown.original_error is None
    assert "tasks" not in str(shown.formatted)


def test_our_errors_keep_their_message_and_code() -> None:
    assert coded_error(_raised_in_resolver(Conflict("already settled"))).formatted["extensions"] == {
        "code": "CONFLICT"
    }
    bad = coded_error(_raised_in_resolver(BadInput("input.title", "must be 1 to 200 characters")))
    assert bad.extensions == {"code": "BAD_USER_INPUT", "field": "input.title"}
    assert bad.message == "input.title: must be 1 to 200 characters"


def test_document_and_scalar_errors() -> None:
    assert coded_error(GraphQLError("Cannot query field 'x'")).extensions == {
        "code": "GRAPHQL_VALIDATION_FAILED"
    }
    wrapped = GraphQLError("Variable '$at' got invalid value", original_error=InvalidDateTime("not ISO 8601"))
    assert coded_error(wrapped).extensions == {"code": "BAD_USER_INPUT"}

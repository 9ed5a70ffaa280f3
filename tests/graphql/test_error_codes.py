"""What a client sees of an error: the contract's code, and nothing about the inside."""

from __future__ import annotations

import pytest
from graphql import GraphQLError

from schema.errors import INTERNAL_MESSAGE, coded_error
from schema.scalars import InvalidDateTime
from services.kit.errors import BadInput, Conflict

pytestmark = pytest.mark.unit


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


def test_variable_coercion_is_bad_user_input_naming_the_variable() -> None:
    from graphql import OperationDefinitionNode, build_schema, execute_sync, parse

    schema = build_schema("input I { a: Int! } type Query { f(x: Int!, i: I): Int }")
    document = parse("query($x: Int!, $i: I) { f(x: $x, i: $i) }")
    for variables in ({}, {"x": "a"}, {"x": None}, {"x": 1, "i": {"a": 1, "b": 2}}):
        result = execute_sync(schema, document, variable_values=variables)
        assert result.errors
        for error in result.errors:
            # the innermost cause of a coercion error is a GraphQLError: the client's mistake, not ours
            assert coded_error(error).extensions in (
                {"code": "BAD_USER_INPUT", "field": "x"},
                {"code": "BAD_USER_INPUT", "field": "i"},
            )
    operation = document.definitions[0]
    assert isinstance(operation, OperationDefinitionNode) and operation.variable_definitions
    # a validation rule's error points at a variable too, but has no cause: the document is wrong
    validation = GraphQLError("Variable '$x' is never used.", nodes=operation.variable_definitions[0])
    assert coded_error(validation).extensions == {"code": "GRAPHQL_VALIDATION_FAILED"}


def test_a_dependency_that_does_not_answer_is_service_unavailable() -> None:
    import asyncio

    import asyncpg

    from harness.proofloop import free_port

    async def refused() -> BaseException:
        try:
            await asyncpg.connect(f"postgres://postgres@127.0.0.1:{free_port()}/x")
        except OSError as exc:
            return exc
        raise AssertionError("connected to a closed port")

    shown = coded_error(_raised_in_resolver(asyncio.run(refused())))  # type: ignore[arg-type]
    assert shown.extensions == {"code": "SERVICE_UNAVAILABLE", "retryAfterSeconds": 1}
    assert shown.message == "the database does not answer; retry in 1 s"

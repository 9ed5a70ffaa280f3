"""The spec's validation rules, with a bound on what their errors may cost and weigh.

graphql-core stops after 100 errors, and some of its messages print the value they are about: an object
literal missing a required field is printed whole in each of up to 100 errors (a 2.2 KB anonymous
document once cost 0.58 s of the API's event loop and answered 366 KB). Here the rules stop after
MAX_VALIDATION_ERRORS, and each message is cut at MAX_MESSAGE_CHARS. The literals themselves are bounded
before any rule runs (schema/document_shape.py: no object literal has more fields than the largest input
type), so each error's own printing is bounded too.

Runs in Strawberry's place: an extension that sets `pre_execution_errors` makes Strawberry skip its own
validation; the rules are Strawberry's (the request's, and the two it always adds).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import GraphQLError, validate
from strawberry.extensions import SchemaExtension
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule

MAX_VALIDATION_ERRORS = 20
MAX_MESSAGE_CHARS = 1_000


def bounded(error: GraphQLError) -> GraphQLError:
    if len(error.message) <= MAX_MESSAGE_CHARS:
        return error
    cut = f"{error.message[:MAX_MESSAGE_CHARS]}… ({len(error.message) - MAX_MESSAGE_CHARS} characters more)"
    return GraphQLError(cut, error.nodes, error.source, error.positions, error.path, None, error.extensions)


class BoundedValidation(SchemaExtension):
    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        # a refusal of the shape, or a document that passed before (schema/shared_validation.py), has its
        # errors already: nothing to run
        if context.pre_execution_errors is None and document is not None and context.validation_rules:
            rules = (*context.validation_rules, MaybeNullValidationRule, OneOfInputValidationRule)
            errors = validate(context.schema._schema, document, rules, max_errors=MAX_VALIDATION_ERRORS)
            context.pre_execution_errors = [bounded(error) for error in errors]
        yield

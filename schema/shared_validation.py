"""One validation per distinct valid document: clients send the same few documents again and again.

The validation rules (the document's shape, the spec's, one upload per document) read nothing but the
document and the schema, so a text that passed them once passes again: it skips them. Measured: a document
of 30 `createTask` aliases took longer to validate than to run. What reads the request (the query cost,
from its variables) is judged each time (schema/query_cost.py); documents that fail are judged each time
too, so no error object is shared between requests. A document that passed is kept, parsed, in the
process's store of valid documents (schema/parse_cache.py), and its text then skips the parser too.
"""

from __future__ import annotations

from collections.abc import Iterator

from strawberry.extensions import SchemaExtension

from schema.parse_cache import valid_documents


class SharedValidation(SchemaExtension):
    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        query, document = context.query, context.graphql_document
        documents = valid_documents(context.context)
        if query is None or document is None or documents is None:
            yield
            return
        known = documents.get(query) is document
        if known and context.pre_execution_errors is None:
            context.pre_execution_errors = []  # Strawberry then skips its own validation
        yield
        if not known and context.pre_execution_errors == []:
            documents.keep(query, document)

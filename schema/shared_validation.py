"""One validation per distinct valid document: clients send the same few documents again and again.

The validation rules (the spec's, depth, aliases, one upload per document) read nothing but the document
and the schema, so a text that passed them once passes again: it skips them. Measured: a document of 30
`createTask` aliases took longer to validate than to run. What reads the request (the query cost, from
its variables) is judged each time (schema/query_cost.py); documents that fail are judged each time too,
so no error object is shared between requests.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

from strawberry.extensions import SchemaExtension

VALID_DOCUMENTS = 256  # like the parse cache (schema/parse_cache.py)

_valid: OrderedDict[str, None] = OrderedDict()


class SharedValidation(SchemaExtension):
    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        query = context.query
        if query is None:
            yield
            return
        known = query in _valid
        if known and context.pre_execution_errors is None:
            _valid.move_to_end(query)
            context.pre_execution_errors = []  # Strawberry then skips its own validation
        yield
        if not known and context.pre_execution_errors == []:
            _valid[query] = None
            if len(_valid) > VALID_DOCUMENTS:
                _valid.popitem(last=False)

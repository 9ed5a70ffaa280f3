"""One parse per distinct valid document: thousands of subscriptions send the same few, and share one AST.

Only documents that passed validation are kept (schema/shared_validation.py keeps them), so a storm of
distinct or invalid documents is parsed, refused and forgotten. The store is bounded by the bytes its
trees take (estimated from their text), not by their number: a tree is 130-200 times its text.
A document an Apollo client sent with its hash (an automatic persisted query) is also found by that hash
while it is kept; the hash goes when the document does.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    OperationType,
    get_operation_ast,
    parse,
)
from strawberry.extensions import SchemaExtension

# measured with tracemalloc on graphql-core 3.3 (locations and tokens kept): 130-200 bytes per character
TREE_BYTES_PER_CHARACTER = 200
# a document at the size limits parses in ~50 ms: off the event loop, two at a time
PARSE_THREADS = 2


class ValidDocuments:
    """Parsed documents that passed validation, by their text, least recently used dropped first; a text
    it does not know is parsed on threads of its own."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self.used_bytes = 0
        self._documents: OrderedDict[str, DocumentNode] = OrderedDict()
        self._by_hash: dict[str, str] = {}  # an automatic persisted query's SHA-256 -> its text
        self._hash_of: dict[str, str] = {}
        self._parsers = ThreadPoolExecutor(PARSE_THREADS, thread_name_prefix="proofloop-parse")

    async def parsed(self, query: str) -> DocumentNode | None:
        """The document's tree: kept, or parsed off the loop (None when it does not parse)."""
        document = self.get(query)
        if document is not None:
            return document
        try:
            return await asyncio.get_running_loop().run_in_executor(self._parsers, parse, query)
        except GraphQLError:
            return None

    def close(self) -> None:
        self._parsers.shutdown(wait=False, cancel_futures=True)

    def get(self, query: str) -> DocumentNode | None:
        document = self._documents.get(query)
        if document is not None:
            self._documents.move_to_end(query)
        return document

    def keep(self, query: str, document: DocumentNode) -> None:
        charge = _charge(query)
        if query in self._documents or charge > self.budget_bytes:
            return
        self._documents[query] = document
        self.used_bytes += charge
        while self.used_bytes > self.budget_bytes:
            dropped, _ = self._documents.popitem(last=False)
            self.used_bytes -= _charge(dropped)
            if (digest := self._hash_of.pop(dropped, None)) is not None:
                del self._by_hash[digest]

    def learn_hash(self, digest: str, query: str) -> bool:
        """Find a kept document by its SHA-256 from now on (the caller checked that it is): only one that
        passed validation is kept, so a hash never names a document that fails. False when it is not kept."""
        if query not in self._documents:
            return False
        # its ~200 bytes ride on the document's charge (200 bytes per character of text)
        self._by_hash[digest] = query
        self._hash_of[query] = digest
        return True

    def text_by_hash(self, digest: str) -> str | None:
        query = self._by_hash.get(digest)
        if query is not None:
            self._documents.move_to_end(query)
        return query

    def __len__(self) -> int:
        return len(self._documents)


def _charge(query: str) -> int:
    return len(query) * TREE_BYTES_PER_CHARACTER


class SharedParses(SchemaExtension):
    """A known valid document's tree is reused, any other parsed off the loop; one that does not parse is
    left to Strawberry's own parse step, whose syntax error then leaves coded (GRAPHQL_VALIDATION_FAILED)
    like every other error."""

    async def on_parse(self) -> AsyncIterator[None]:
        context = self.execution_context
        documents = valid_documents(context.context)
        if context.query and documents is not None:
            context.graphql_document = await documents.parsed(context.query)
        yield


def valid_documents(caller: object) -> ValidDocuments | None:
    """The process's store, reached through the request's resources (None outside the API)."""
    documents = getattr(getattr(caller, "resources", None), "documents", None)
    return documents if isinstance(documents, ValidDocuments) else None


async def _chosen_operation(
    query: object, operation_name: object, documents: ValidDocuments
) -> tuple[DocumentNode, OperationDefinitionNode] | None:
    """A document and its chosen operation (None when it does not parse or names no operation: the normal
    path reports that). Its text is bounded by then (schema/document_limits.py)."""
    if not isinstance(query, str):
        return None
    document = await documents.parsed(query)
    if document is None:
        return None
    operation = get_operation_ast(document, operation_name if isinstance(operation_name, str) else None)
    return (document, operation) if operation is not None else None


async def mutation_fields(
    query: object, operation_name: object, documents: ValidDocuments
) -> frozenset[str] | None:
    """The root field names of a document's chosen operation when it is a mutation, else None."""
    chosen = await _chosen_operation(query, operation_name, documents)
    if chosen is None or chosen[1].operation is not OperationType.MUTATION:
        return None
    document, operation = chosen
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    names: set[str] = set()
    seen: set[str] = set()
    pending = list(operation.selection_set.selections)
    while pending:  # root fields, through fragments spread at the root (each fragment once)
        selection = pending.pop()
        if isinstance(selection, FieldNode):
            names.add(selection.name.value)
        elif isinstance(selection, InlineFragmentNode):
            pending.extend(selection.selection_set.selections)
        elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in seen:
            seen.add(selection.name.value)
            if (fragment := fragments.get(selection.name.value)) is not None:
                pending.extend(fragment.selection_set.selections)
    return frozenset(names)


async def is_subscription(query: object, operation_name: object, documents: ValidDocuments) -> bool:
    """Whether a document's chosen operation is a subscription."""
    chosen = await _chosen_operation(query, operation_name, documents)
    return chosen is not None and chosen[1].operation is OperationType.SUBSCRIPTION

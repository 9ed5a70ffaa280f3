"""The document limits' arithmetic: each fragment is walked once, and the store of valid documents keeps
to its budget of bytes."""

from __future__ import annotations

import pytest
from graphql import parse

from schema.document_limits import DocumentLimits, token_refusal
from schema.document_shape import shape_errors
from schema.parse_cache import TREE_BYTES_PER_CHARACTER, ValidDocuments

pytestmark = pytest.mark.unit

LIMITS = DocumentLimits(max_bytes=16_384, max_tokens=5000, max_fields=2000)


def refusals(document: str) -> list[str]:
    return [error.message for error in shape_errors(parse(document), LIMITS, anonymous=False)]


def test_a_fragment_spread_twice_per_level_is_counted_not_walked() -> None:
    chain = " ".join(f"fragment F{k} on User {{ ...F{k + 1} ...F{k + 1} }}" for k in range(200))
    (message,) = refusals(f"{{ me {{ ...F0 }} }} {chain} fragment F200 on User {{ id }}")
    assert f"selects {2**200 + 1} fields" in message


def test_depth_aliases_duplicates_and_spreads() -> None:
    assert refusals("{ me { id email } }") == []
    path = ["tasks(first: 1)", "edges", "node", *["currentInstance", "task"] * 4]
    (deep,) = refusals("{ " + " { ".join(path) + " { id" + " }" * (len(path) + 1))
    assert "exceeds maximum operation depth of 10" in deep
    (aliases,) = refusals("{ " + " ".join(f"a{n}: me {{ id }}" for n in range(31)) + " }")
    assert "has 31 aliases" in aliases
    # duplicates are counted through fragments, in the set the fragments are spread into
    fragments = " ".join(f"fragment D{n} on User {{ id }}" for n in range(21))
    (duplicates,) = refusals("{ me { " + " ".join(f"...D{n}" for n in range(21)) + " } } " + fragments)
    assert "`id` selected 21 times" in duplicates
    fragments = " ".join(f"fragment S{n} on User {{ id }}" for n in range(31))
    (spreads,) = refusals("{ me { " + " ".join(f"...S{n}" for n in range(31)) + " } } " + fragments)
    assert "31 fragments spread in one selection set" in spreads


def test_tokens_are_counted_without_parsing_and_comments_are_free() -> None:
    assert token_refusal("# " + "x" * 10_000 + "\n{ me { id } }", LIMITS, anonymous=False) is None
    refused = token_refusal("{ me { " + "id " * 5000 + "} }", LIMITS, anonymous=True)
    assert refused is not None and "PROOFLOOP_ANONYMOUS_MAX_DOCUMENT_TOKENS" in refused


def test_the_store_of_valid_documents_keeps_to_its_bytes() -> None:
    documents = ValidDocuments(budget_bytes=100 * TREE_BYTES_PER_CHARACTER * 10)
    texts = [f"query Q{n:04} {{ me {{ id }} }}".ljust(100) for n in range(50)]
    for text in texts:
        documents.keep(text, parse(text))
    assert len(documents) == 10 and documents.used_bytes <= documents.budget_bytes
    assert documents.get(texts[0]) is None and documents.get(texts[-1]) is not None
    documents.keep("{ me { id } }" + " " * 2000, parse("{ me { id } }"))  # larger than the budget: not kept
    assert len(documents) == 10

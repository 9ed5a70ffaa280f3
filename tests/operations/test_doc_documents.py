"""Every GraphQL document the README and docs/ show fits the schema and uses no deprecated name: a reader
copying one into GraphiQL gets an answer, in the current shape."""

from __future__ import annotations

import re

import pytest
from graphql import NoDeprecatedCustomRule, build_schema, parse, validate
from graphql.validation import specified_rules

from harness.proofloop import ROOT

pytestmark = pytest.mark.unit

_BLOCK = re.compile(r"```graphql\n(.*?)```", re.S)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def documents() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for number, block in enumerate(_BLOCK.findall(page.read_text()), start=1):
            found.append((f"{page.relative_to(ROOT)}#{number}", block))
    return found


def test_the_docs_show_documents() -> None:
    assert len(documents()) >= 3


@pytest.mark.parametrize(("where", "document"), documents(), ids=[where for where, _ in documents()])
def test_a_shown_document_fits_the_schema_without_deprecated_names(where: str, document: str) -> None:
    schema = build_schema((ROOT / "schema.graphql").read_text())
    errors = validate(schema, parse(document), [*specified_rules, NoDeprecatedCustomRule])
    assert [e.message for e in errors] == [], where

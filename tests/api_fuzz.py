"""Fuzzing the live API: hypothesis-graphql writes documents for every query and mutation of the schema,
with generated arguments, and each is sent as a logged-in user. Any HTTP 5xx, INTERNAL_SERVER_ERROR, or a
response that does not come within RESPONSE_TIMEOUT fails the run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import graphql
import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import from_schema, nodes

ROOT = Path(__file__).resolve().parent.parent
# A response that takes longer than this counts as hung (the budgets should keep every one far below).
RESPONSE_TIMEOUT = 10.0
# logout would revoke the fuzzing user's own token and end the run's authenticated half
SKIPPED_FIELDS = frozenset({"logout"})


@dataclass
class FuzzReport:
    requests: int = 0
    codes: dict[str, int] = field(default_factory=dict)
    slowest_seconds: float = 0.0
    slowest_document: str = ""


def root_fields(schema: graphql.GraphQLSchema) -> list[str]:
    names: list[str] = []
    for root in (schema.query_type, schema.mutation_type):
        if root is not None:
            names += [name for name in root.fields if name not in SKIPPED_FIELDS]
    return names


def scalar_strategies(known_ids: list[str]) -> dict[str, st.SearchStrategy[graphql.ValueNode]]:
    instants = st.datetimes(
        min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
    ).map(lambda moment: moment.isoformat())
    return {
        "DateTime": st.one_of(instants, st.text(max_size=40)).map(nodes.String),
        "Date": st.one_of(st.dates().map(lambda day: day.isoformat()), st.text(max_size=12)).map(
            nodes.String
        ),
        "ID": st.one_of(st.sampled_from(known_ids), st.text(max_size=40)).map(nodes.String),
        "Upload": st.just(nodes.String("not a file")),
    }


def check_response(response: httpx.Response, document: str) -> list[str]:
    """The codes of the response's errors; fails on a 5xx or an internal error."""
    assert response.status_code < 500, f"HTTP {response.status_code} for:\n{document}\n{response.text[:500]}"
    body = response.json()
    codes = [str((e.get("extensions") or {}).get("code")) for e in body.get("errors") or ()]
    assert "INTERNAL_SERVER_ERROR" not in codes, f"internal error for:\n{document}\n{body}"
    return codes


def fuzz_api(url: str, token: str, known_ids: list[str], *, examples: int) -> FuzzReport:
    schema = graphql.build_schema((ROOT / "schema.graphql").read_text())
    documents = from_schema(
        schema, fields=root_fields(schema), custom_scalars=scalar_strategies(known_ids), codec=None
    )
    report = FuzzReport()
    client = httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=RESPONSE_TIMEOUT
    )

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(document=documents)
    def one_request(document: str) -> None:
        started = time.monotonic()
        response = client.post("/graphql", json={"query": document})
        elapsed = time.monotonic() - started
        report.requests += 1
        if elapsed > report.slowest_seconds:
            report.slowest_seconds, report.slowest_document = elapsed, document
        for code in check_response(response, document) or ["OK"]:
            report.codes[code] = report.codes.get(code, 0) + 1

    with client:
        one_request()
    return report

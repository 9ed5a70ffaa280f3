"""Fuzzing the live API: hypothesis-graphql writes documents for every query and mutation of the schema,
with generated arguments, and each is sent as a logged-in user. Any HTTP 5xx, INTERNAL_SERVER_ERROR, or a
response that does not come within RESPONSE_TIMEOUT fails the run.

The value classes that broke the API before are drawn on purpose: DateTimes at the ends of the years
1..9999 with offsets up to ±23:59, and (fuzz_bodies) bodies that are no JSON object, bodies that are not
UTF-8, and huge or deeply nested documents and variables.
"""

from __future__ import annotations

import json
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


EDGE_DAYS = ["0001-01-01", "0001-01-02", "1899-12-31", "1900-01-01", "9000-12-31", "9999-12-30", "9999-12-31"]
OFFSETS = ["Z", "+00:00", "+00:01", "-00:01", "+14:00", "-14:00", "+23:59", "-23:59"]
# invalid UTF-8: a stray continuation byte, a truncated sequence, an encoded surrogate, an overlong form
NOT_UTF8 = [b"\xff", b"\x80", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf8\x88\x80\x80\x80"]


def extreme_instants() -> st.SearchStrategy[str]:
    """Instants at the ends of the years 1..9999, whose offset may carry them past either end."""
    times = st.times().map(lambda moment: moment.isoformat())
    return st.builds(
        lambda day, moment, offset: f"{day}T{moment}{offset}",
        st.sampled_from(EDGE_DAYS),
        times,
        st.sampled_from(OFFSETS),
    )


def scalar_strategies(known_ids: list[str]) -> dict[str, st.SearchStrategy[graphql.ValueNode]]:
    instants = st.datetimes(
        min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
    ).map(lambda moment: moment.isoformat())
    return {
        "DateTime": st.one_of(instants, extreme_instants(), st.text(max_size=40)).map(nodes.String),
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


def _json_values() -> st.SearchStrategy[object]:
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10)
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=8,
    )


def _nested(depth: int, opening: str, closing: str, core: str) -> str:
    return opening * depth + core + closing * depth


def hostile_bodies() -> st.SearchStrategy[bytes]:
    """Bodies that are no JSON object, not UTF-8, or carry huge or deeply nested documents and variables."""
    non_objects = _json_values().filter(lambda value: not isinstance(value, dict)).map(json.dumps)
    not_utf8 = st.builds(
        lambda before, bad, after: b'{"query": "{ __typename }", "v": "' + before + bad + after + b'"}',
        st.binary(max_size=20),
        st.sampled_from(NOT_UTF8),
        st.binary(max_size=20),
    )
    depth = st.integers(min_value=10, max_value=5_000)
    width = st.integers(min_value=100, max_value=20_000)
    documents = st.one_of(
        depth.map(lambda n: _nested(n, "me { ", " }", "id").join("{}")),
        depth.map(lambda n: "query { tasks(first: " + _nested(n, "[", "]", "1") + ") { edges { cursor } } }"),
        depth.map(lambda n: "mutation { createTask(input: " + _nested(n, "{a: ", "}", "1") + ") { id } }"),
        width.map(lambda n: "{ me { " + " ".join(f"a{i}: id" for i in range(n)) + " } }"),
        width.map(lambda n: "{ tasks(first: 0) { edges { cursor " + "cursor " * n + "} } }"),
        width.map(
            lambda n: (
                "{ __typename } "
                + " ".join(f"fragment F{i} on Query {{ __typename }}" for i in range(n // 10))
            )
        ),
    ).map(lambda document: json.dumps({"query": document}))
    deep_variables = depth.map(
        lambda n: (
            '{"query": "query($v: String) { __typename }", "variables": {"v": '
            + _nested(n, "[", "]", "")
            + "}}"
        )
    )
    texts = st.one_of(non_objects, documents, deep_variables).map(str.encode)
    return st.one_of(texts, not_utf8, st.binary(max_size=64))


def fuzz_bodies(url: str, token: str, *, examples: int) -> FuzzReport:
    """POST hostile bodies as application/json on one kept-alive connection; each must get its contract."""
    report = FuzzReport()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    client = httpx.Client(base_url=url, headers=headers, timeout=RESPONSE_TIMEOUT)

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(body=hostile_bodies())
    def one_request(body: bytes) -> None:
        started = time.monotonic()
        response = client.post("/graphql", content=body)
        elapsed = time.monotonic() - started
        report.requests += 1
        shown = body[:300].decode("utf-8", "replace")
        if elapsed > report.slowest_seconds:
            report.slowest_seconds, report.slowest_document = elapsed, shown
        for code in check_response(response, shown) or ["OK"]:
            report.codes[code] = report.codes.get(code, 0) + 1

    with client:
        one_request()
        after = client.post("/graphql", json={"query": "{ __typename }"})  # the connection still serves
        assert after.json() == {"data": {"__typename": "Query"}}, after.text
    return report

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
from collections.abc import Callable
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
RESPONSE_TIMEOUT = 30.0
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


ROUND = 40  # examples per hypothesis run: a budget is checked between runs


def in_rounds(run: Callable[[int], None], report: FuzzReport, examples: int, budget_seconds: float) -> None:
    """`run(n)` (a hypothesis test of n examples) again and again, until `examples` requests are sent or
    `budget_seconds` have passed: a slow machine sends fewer documents in the same time instead of
    overstaying the test's timeout (the report says how many were sent)."""
    deadline = time.monotonic() + budget_seconds
    while report.requests < examples and time.monotonic() < deadline:
        sent = report.requests
        run(min(ROUND, examples - sent))
        if report.requests == sent:  # hypothesis found nothing new to try
            return


def fuzz_api(
    url: str, token: str, known_ids: list[str], *, examples: int, budget_seconds: float = 3600
) -> FuzzReport:
    schema = graphql.build_schema((ROOT / "schema.graphql").read_text())
    documents = from_schema(
        schema, fields=root_fields(schema), custom_scalars=scalar_strategies(known_ids), codec=None
    )
    report = FuzzReport()
    client = httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=RESPONSE_TIMEOUT
    )

    def one_request(document: str) -> None:
        started = time.monotonic()
        response = client.post("/graphql", json={"query": document})
        elapsed = time.monotonic() - started
        report.requests += 1
        if elapsed > report.slowest_seconds:
            report.slowest_seconds, report.slowest_document = elapsed, document
        for code in check_response(response, document) or ["OK"]:
            report.codes[code] = report.codes.get(code, 0) + 1

    def run(n: int) -> None:
        _fuzz_settings(n)(given(document=documents)(one_request))()

    with client:
        in_rounds(run, report, examples, budget_seconds)
    return report


def _fuzz_settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def _json_values() -> st.SearchStrategy[object]:
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10)
    return st.recursive(leaves, _containers_of, max_leaves=8)


def _containers_of(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    # a named function: hypothesis 6.170 reads a lambda's source to see that it recurses, and misreads
    # this one inside a call spread over lines (a deprecation warning, an error under filterwarnings)
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)


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


def fuzz_bodies(url: str, token: str, *, examples: int, budget_seconds: float = 3600) -> FuzzReport:
    """POST hostile bodies as application/json on one kept-alive connection; each must get its contract."""
    report = FuzzReport()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    client = httpx.Client(base_url=url, headers=headers, timeout=RESPONSE_TIMEOUT)

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

    def run(n: int) -> None:
        _fuzz_settings(n)(given(body=hostile_bodies())(one_request))()

    with client:
        in_rounds(run, report, examples, budget_seconds)
        after = client.post("/graphql", json={"query": "{ __typename }"})  # the connection still serves
        assert after.json() == {"data": {"__typename": "Query"}}, after.text
    return report

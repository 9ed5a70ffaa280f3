"""The pure guards behind the budgets: JSON nesting, zone names, query cost."""

from __future__ import annotations

import json

import pytest
from graphql import FragmentDefinitionNode, OperationDefinitionNode, parse

from rules.errors import InvalidInput
from rules.timezones import zone_of
from schema.query_cost import QueryCost
from schema.schema import schema
from web.request_json import (
    MAX_NESTING,
    RefusedJSON,
    body_kind,
    decode_request_json,
    json_kind,
    nesting_depth,
)

pytestmark = pytest.mark.unit


def test_nesting_depth_ignores_brackets_inside_strings() -> None:
    assert nesting_depth(json.dumps({"a": "[" * 500}).encode()) <= 1
    assert nesting_depth(("[" * 40 + "]" * 40).encode()) == 40
    assert nesting_depth(b'{"a": "\\"[[[[", "b": [[1]]}' + b"[]" * 40) == 3


def test_decode_refuses_what_graphql_cannot_take() -> None:
    with pytest.raises(RefusedJSON) as deep:
        decode_request_json("[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1))
    assert deep.value.field == "variables"
    with pytest.raises(RefusedJSON) as nan:
        decode_request_json('{"variables": {"input": {"xs": [1, NaN]}}}')
    assert nan.value.field == "input.xs.1"
    assert decode_request_json('{"variables": {"n": 1.5, "m": 3}}') == {"variables": {"n": 1.5, "m": 3}}


@pytest.mark.parametrize(
    "body",
    [b"{}", b' \r\n\t{"a": 1}', b"\xef\xbb\xbf{}", b"[1]", b'"x"', b"-1", b"0.5", b"true", b"null", b""],
)
def test_a_body_kind_is_the_kind_its_decoded_value_has(body: bytes) -> None:
    expected = json_kind(json.loads(body.decode("utf-8-sig"))) if body.strip() else "empty"
    assert body_kind(body) == expected


def test_a_body_that_is_not_utf8_is_refused_as_the_body() -> None:
    with pytest.raises(RefusedJSON) as refused:
        decode_request_json(b'{"query": "\xff"}')
    assert refused.value.field == "body"
    assert decode_request_json(b'\xef\xbb\xbf{"query": "\xc3\xa9"}') == {"query": "\u00e9"}


@pytest.mark.parametrize(
    "name", ["Europe", "Factory", "right/UTC", "posix/UTC", "x" * 300, "", "../../etc", "EST", "HST", "Japan"]
)
def test_zone_names_that_are_no_place(name: str) -> None:
    with pytest.raises(InvalidInput):
        zone_of(name, "timezone")


@pytest.mark.parametrize("name", ["Europe/Berlin", "America/New_York", "US/Eastern", "Etc/GMT+5", "UTC"])
def test_real_zones(name: str) -> None:
    assert str(zone_of(name, "timezone")) == name


def cost(document: str, variables: dict[str, object] | None = None) -> int:
    parsed = parse(document)
    operation = next(d for d in parsed.definitions if isinstance(d, OperationDefinitionNode))
    fragments = {d.name.value: d for d in parsed.definitions if isinstance(d, FragmentDefinitionNode)}
    return QueryCost(schema._schema, fragments, variables or {}, operation).of_operation(operation)


def test_cost_multiplies_sizes_through_nesting() -> None:
    assert cost("{ me { id } }") == 2
    assert cost("{ tasks(first: 10) { edges { node { id } } } }") == 10 * (1 + 1 + 1 + 1)
    assert cost("{ tasks { edges { node { id } } } }") == 20 * 4  # the argument's default
    assert cost("query($n: Int) { tasks(first: $n) { edges { node { id } } } }", {"n": 3}) == 3 * 4
    assert cost("{ tasks(first: 100000) { totalCount } }") == 100 * 2  # capped: the field refuses more


def test_fragment_spreads_cost_once_to_compute() -> None:
    levels = ["fragment F0 on Task { id }"]
    for i in range(1, 40):  # each fragment spreads the previous one twice: 2^40 if walked naively
        levels.append(
            f"fragment F{i} on Task {{ a: ...F{i - 1} b: ...F{i - 1} }}".replace("a: ", "").replace("b: ", "")
        )
    document = "{ tasks(first: 1) { edges { node { ...F39 } } } }\n" + "\n".join(levels)
    assert cost(document) > 0


def test_no_subtree_is_priced_at_zero() -> None:
    under = "edges { node { upcoming(first: 100) } }"
    # an empty or negative page, or a field the schema does not have, still costs what it selects
    assert cost(f"{{ tasks(first: 0) {{ {under} }} }}") == cost(f"{{ tasks(first: 1) {{ {under} }} }}")
    assert cost(f"{{ tasks(first: -5) {{ {under} }} }}") == cost(f"{{ tasks(first: 1) {{ {under} }} }}")
    assert cost("{ nosuchfield { a b { c } } }") == 4


@pytest.mark.parametrize(
    "field",
    [
        "eventsConnection",
        "reviewQueueConnection",
        "partnershipsConnection",
        "sessionsConnection",
        "webhooksConnection",
    ],
)
def test_every_connection_is_priced_by_first_or_last(field: str) -> None:
    page = "{ edges { cursor node { id } } pageInfo { hasNextPage } }"
    # edges (1 + cursor + node + id) and pageInfo (2), all times the page size
    assert cost(f"{{ {field}(first: 7) {page} }}") == 7 * (1 + 4 + 2)
    assert cost(f"{{ {field}(last: 7) {page} }}") == 7 * (1 + 4 + 2)
    assert cost(f"query($n: Int) {{ {field}(last: $n) {page} }}", {"n": 9}) == 9 * (1 + 4 + 2)
    assert cost(f"{{ {field}(last: 100000) {page} }}") == 100 * (1 + 4 + 2)


def test_a_size_the_document_gives_wins_over_a_default() -> None:
    page = "{ edges { node { id } } }"
    assert cost(f"{{ tasks(last: 3) {page} }}") == 3 * 4  # not first's default of 20
    assert cost(f"query($n: Int) {{ tasks(last: $n) {page} }}") == 20 * 4  # no value: the default stands
    assert cost(f"{{ tasks(first: 5, last: 9) {page} }}") == 9 * 4  # refused by the field; priced high
    assert cost(f'{{ task(id: "1") {{ instances(last: 4) {page} }} }}') == 1 + 4 * 4

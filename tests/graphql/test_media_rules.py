"""Each one-number rule (services/tasks ColumnRule) reaches the API through schema/media_rules.py: its input
field on CreateTaskInput and UpdateTaskInput, and its waiting value on PendingChange, read from the pending
change by the rule itself. A member added to ColumnRule without its API side fails here."""

from __future__ import annotations

import dataclasses

import pytest
from graphql import GraphQLInputObjectType, GraphQLObjectType
from strawberry.types.base import StrawberryOptional, get_object_definition
from strawberry.utils.str_converters import to_camel_case

from schema.media_rules import MediaRulesOnCreate, MediaRulesOnUpdate, MediaRulesWaiting
from schema.schema import schema
from services.tasks import COLUMN_RULES, ColumnRule, PendingChange

pytestmark = pytest.mark.unit

GRAPHQL_SCHEMA = schema._schema


def _input_field(rule: ColumnRule) -> str:
    return rule.input.removeprefix("input.")


@pytest.mark.parametrize("rule", COLUMN_RULES, ids=lambda rule: rule.name)
def test_the_rule_is_an_input_on_create_and_update_and_waits_under_its_column(rule: ColumnRule) -> None:
    for name in ("CreateTaskInput", "UpdateTaskInput"):
        given = GRAPHQL_SCHEMA.get_type(name)
        assert isinstance(given, GraphQLInputObjectType)
        assert _input_field(rule) in given.fields, name
    pending = GRAPHQL_SCHEMA.get_type("PendingChange")
    assert isinstance(pending, GraphQLObjectType)
    waiting = to_camel_case(rule.column)
    assert waiting in pending.fields
    resolver = pending.fields[waiting].resolve
    assert resolver is not None
    shown = MediaRulesWaiting(waiting=PendingChange(column_rules={rule: 7.0}))
    assert resolver(shown, None) == 7.0


def _rule_input(rules: type, field: str, value: float) -> object:
    """The rule's input type, with `value` in each field that has no default."""
    definition = get_object_definition(rules, strict=True)
    declared = next(f for f in definition.fields if f.python_name == field).type
    assert isinstance(declared, StrawberryOptional)
    rule_type = declared.of_type
    assert isinstance(rule_type, type)
    required = [
        f.python_name
        for f in get_object_definition(rule_type, strict=True).fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    return rule_type(**dict.fromkeys(required, value))


@pytest.mark.parametrize("rule", COLUMN_RULES, ids=lambda rule: rule.name)
@pytest.mark.parametrize("rules", [MediaRulesOnCreate, MediaRulesOnUpdate])
def test_the_input_gives_the_rule_its_value(rule: ColumnRule, rules: type) -> None:
    field = _input_field(rule)
    assert rules().media_column_rules() == {}  # left out: no value
    given = rules(**{field: _rule_input(rules, field, 7.0)})
    assert given.media_column_rules() == {rule: 7.0}

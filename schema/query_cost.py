"""A document's cost, refused over the budget before anything runs.

Every selected field costs 1; a field sized by `first`/`last` (the literal, the variable's value or the
argument's default) multiplies the cost of everything under it, and so do lists without a size argument
(by an assumed length). So `tasks(first:100){edges{node{u0:upcoming(first:100) ...}}}` costs about
100 x 29 x 100 and is refused, while the depth and alias caps alone would let it run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLList,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
    get_nullable_type,
)
from strawberry.extensions import SchemaExtension

# what a page size counts as at most: larger ones are refused by the field itself (BAD_USER_INPUT)
from services.kit import MAX_PAGE

SIZE_ARGUMENTS = ("first", "last")
# a list argument naming the rows a field returns (nodes(ids:)) sizes it by its length
SIZE_LISTS = ("ids",)
# A list without a size argument (partnerships, an instance's verifications) is assumed this long.
UNSIZED_LIST = 20


class QueryCost:
    """Computes one operation's cost against a schema, given the request's variables."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
        operation: OperationDefinitionNode,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.defaults = {d.variable.name.value: d.default_value for d in operation.variable_definitions or ()}
        self._fragment_costs: dict[tuple[str, str], int] = {}

    def of_operation(self, operation: OperationDefinitionNode) -> int:
        root = self.schema.get_root_type(operation.operation)
        if root is None:
            return 0
        return self._selection_cost(operation.selection_set, root)

    def _selection_cost(self, selection_set: SelectionSetNode, parent: GraphQLNamedType | None) -> int:
        total = 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                total += self._field_cost(selection, parent)
            elif isinstance(selection, InlineFragmentNode):
                total += self._selection_cost(selection.selection_set, self._condition(selection, parent))
            elif isinstance(selection, FragmentSpreadNode):
                total += self._fragment_cost(selection.name.value, parent)
        return total

    def _field_cost(self, field: FieldNode, parent: GraphQLNamedType | None) -> int:
        if not isinstance(parent, GraphQLObjectType) or field.name.value not in parent.fields:
            # unknown fields are another rule's to report; until then what they select costs as usual
            below = 0 if field.selection_set is None else self._selection_cost(field.selection_set, None)
            return 1 + below
        definition = parent.fields[field.name.value]
        child = 0
        if field.selection_set is not None:
            child = self._selection_cost(field.selection_set, get_named_type(definition.type))
        return self._multiplier(field, definition, parent) * (1 + child)

    def _fragment_cost(self, name: str, parent: GraphQLNamedType | None) -> int:
        """Each fragment is costed once per parent type, so spreading it many times stays cheap to check."""
        key = (name, parent.name if parent is not None else "")
        if key not in self._fragment_costs:
            fragment = self.fragments.get(name)
            self._fragment_costs[key] = 0  # a cycle (refused by another rule) adds nothing
            if fragment is not None:
                self._fragment_costs[key] = self._selection_cost(
                    fragment.selection_set, self._condition(fragment, parent)
                )
        return self._fragment_costs[key]

    def _condition(
        self, fragment: InlineFragmentNode | FragmentDefinitionNode, parent: GraphQLNamedType | None
    ) -> GraphQLNamedType | None:
        if fragment.type_condition is None:
            return parent
        return self.schema.get_type(fragment.type_condition.name.value) or parent

    def _multiplier(self, field: FieldNode, definition: GraphQLField, parent: GraphQLObjectType) -> int:
        size = self._size_argument(field, definition)
        if size is not None:
            return size
        if isinstance(get_nullable_type(definition.type), GraphQLList) and not _is_connection(parent):
            return UNSIZED_LIST  # a connection's edges are sized by the field that returned it
        return 1

    def _size_argument(self, field: FieldNode, definition: GraphQLField) -> int | None:
        sizes = [self._argument_size(field, definition, name) for name in SIZE_ARGUMENTS]
        # a size the document gives wins over a default: `last: 3` alone is a page of 3, not first's 20
        sizes += [(self._list_length(field, name), True) for name in SIZE_LISTS if name in definition.args]
        given = [size for size, explicit in sizes if explicit and size is not None] or [
            size for size, _ in sizes if size is not None
        ]
        if not given:
            return None
        # a page of 0 or less still resolves the field and validates all below it: never priced at 0
        return max(1, min(max(given), MAX_PAGE))

    def _list_length(self, field: FieldNode, name: str) -> int | None:
        node = next((a.value for a in field.arguments or () if a.name.value == name), None)
        if isinstance(node, ListValueNode):
            return len(node.values)
        if isinstance(node, VariableNode):
            value = self.variables.get(node.name.value)
            return len(value) if isinstance(value, list) else None
        return None

    def _argument_size(
        self, field: FieldNode, definition: GraphQLField, name: str
    ) -> tuple[int | None, bool]:
        """The argument's size, and whether the document (or its variables) gave it rather than a default."""
        argument = definition.args.get(name)
        if argument is None:
            return None, False
        default = argument.default_value if isinstance(argument.default_value, int) else None
        node = next((a.value for a in field.arguments or () if a.name.value == name), None)
        if isinstance(node, IntValueNode):
            return int(node.value), True
        if isinstance(node, VariableNode):
            value = self.variables.get(node.name.value, self.defaults.get(node.name.value))
            if isinstance(value, IntValueNode):
                return int(value.value), True
            if isinstance(value, int) and not isinstance(value, bool):
                return value, True
            if value is None:
                return default, False
            return MAX_PAGE, True  # not an Int: coercion refuses it later
        return default, False


def _is_connection(parent: GraphQLOutputType) -> bool:
    return isinstance(parent, GraphQLObjectType) and parent.name.endswith("Connection")


def over_budget(
    schema: GraphQLSchema, document: DocumentNode, variables: Mapping[str, Any], budget: int
) -> list[GraphQLError]:
    """An error for each operation of the document whose cost exceeds the budget (none when all fit).

    It runs before the spec's rules (an unknown field costs like a known one of size 1, an unknown fragment
    nothing), so a document over the budget is refused without being validated."""
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    errors = []
    for node in document.definitions:
        if not isinstance(node, OperationDefinitionNode):
            continue
        cost = QueryCost(schema, fragments, variables, node).of_operation(node)
        if cost > budget:
            errors.append(
                GraphQLError(
                    f"query cost {cost} exceeds the budget of {budget}: list sizes (first, last) "
                    "multiply through nesting; ask for smaller pages or fewer nested lists",
                    node,
                )
            )
    return errors


class QueryCostLimiter(SchemaExtension):
    """Prices the document with this request's variables against the budget from its settings.

    Not a validation rule: it reads the request, while the rules proper are judged once per document
    (schema/shared_validation.py)."""

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        budget: int | None = getattr(getattr(context.context, "settings", None), "max_query_cost", None)
        refused = bool(context.pre_execution_errors)  # by the document's shape: no need to price it
        if budget is not None and context.graphql_document is not None and not refused:
            errors = over_budget(
                context.schema._schema, context.graphql_document, context.variables or {}, budget
            )
            if errors:
                context.pre_execution_errors = errors  # Strawberry then skips the other rules
        yield

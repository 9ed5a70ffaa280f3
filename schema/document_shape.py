"""A document's shape, judged before any other rule reads it, in work that grows linearly with the text.

Depth, aliases and fields (fragments expanded, duplicates counted) come from one walk that computes each
fragment's once and reuses it, so a fragment spread twice at each of 30 levels costs 30 steps, not 2^30.
Only then, with the fields known to be within budget, is each selection set's overlap counted (the same
response name many times, many fragments): the spec's overlapping-fields rule compares those in pairs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInputObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    Node,
    ObjectValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
)
from strawberry.extensions import SchemaExtension

from schema.context import Context
from schema.document_limits import DocumentLimits


@dataclass
class Shape:
    depth: int = 0  # the deepest field below, counting from 0 for the set's own fields
    aliases: int = 0
    fields: int = 0  # every field the operation would select, each copy of a duplicate and a spread counted


class DocumentShape:
    """Depth, aliases and fields of a document's operations, each fragment's walked once and reused."""

    def __init__(self, fragments: Mapping[str, FragmentDefinitionNode]) -> None:
        self.fragments = fragments
        self._of_fragment: dict[str, Shape] = {}

    def of_set(self, selection_set: SelectionSetNode) -> Shape:
        shape = Shape()
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                part = Shape(fields=1, aliases=int(selection.alias is not None))
                if selection.selection_set is not None:
                    below = self.of_set(selection.selection_set)
                    # introspection's own nesting (ofType { ofType … }) is not the caller's choice
                    if not selection.name.value.startswith("__"):
                        part.depth = 1 + below.depth
                    part.aliases += below.aliases
                    part.fields += below.fields
            elif isinstance(selection, InlineFragmentNode):
                part = self.of_set(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                part = self._of_spread(selection.name.value)
            else:
                continue
            shape.depth = max(shape.depth, part.depth)
            shape.aliases += part.aliases
            shape.fields += part.fields
        return shape

    def _of_spread(self, name: str) -> Shape:
        if name not in self._of_fragment:
            self._of_fragment[name] = Shape()  # a cycle (refused by the spec's rules) adds nothing
            fragment = self.fragments.get(name)
            if fragment is not None:
                self._of_fragment[name] = self.of_set(fragment.selection_set)
        return self._of_fragment[name]


class SetOverlap:
    """Within each selection set (fragments expanded): the most copies of one response name, and how many
    distinct fragments it spreads. Each fragment's names are collected once; run it only on operations
    whose fields are within budget, which bounds the merging too."""

    def __init__(self, fragments: Mapping[str, FragmentDefinitionNode], limits: DocumentLimits) -> None:
        self.fragments = fragments
        self.limits = limits
        self._names: dict[str, Counter[str]] = {}
        self._checked: set[str] = set()

    def problem(self, selection_set: SelectionSetNode) -> str | None:
        """What is over a limit in this set or any set below it, or None."""
        names, spreads = Counter[str](), set[str]()
        self._collect(selection_set, names, spreads)
        if len(spreads) > self.limits.max_spreads:
            return (
                f"{len(spreads)} fragments spread in one selection set, "
                f"over the limit of {self.limits.max_spreads} (no setting)"
            )
        if names:
            name, copies = names.most_common(1)[0]
            if copies > self.limits.max_duplicates:
                return (
                    f"`{name}` selected {copies} times in one selection set, "
                    f"over the limit of {self.limits.max_duplicates} (no setting)"
                )
        for below in self._sets_below(selection_set):
            if (found := self.problem(below)) is not None:
                return found
        return None

    def _collect(self, selection_set: SelectionSetNode, names: Counter[str], spreads: set[str]) -> None:
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                names[(selection.alias or selection.name).value] += 1
            elif isinstance(selection, InlineFragmentNode):
                self._collect(selection.selection_set, names, spreads)
            elif isinstance(selection, FragmentSpreadNode):
                spreads.add(selection.name.value)
                names.update(self._fragment_names(selection.name.value))

    def _fragment_names(self, name: str) -> Counter[str]:
        if name not in self._names:
            self._names[name] = Counter()  # a cycle adds nothing
            fragment = self.fragments.get(name)
            if fragment is not None:
                names: Counter[str] = Counter()
                self._collect(fragment.selection_set, names, set())
                self._names[name] = names
        return self._names[name]

    def _sets_below(self, selection_set: SelectionSetNode) -> Iterator[SelectionSetNode]:
        """The sets of this set's fields, its inline fragments' and (once per document) its fragments'."""
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode) and selection.selection_set is not None:
                yield selection.selection_set
            elif isinstance(selection, InlineFragmentNode):
                yield from self._sets_below(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in self._checked:
                self._checked.add(selection.name.value)
                fragment = self.fragments.get(selection.name.value)
                if fragment is not None:
                    yield from self._sets_below(fragment.selection_set)


@lru_cache(maxsize=8)
def widest_input(schema: GraphQLSchema) -> int:
    """The most fields any input type of the schema has: an object literal with more is never valid."""
    return max(
        (len(t.fields) for t in schema.type_map.values() if isinstance(t, GraphQLInputObjectType)), default=0
    )


def literal_problem(document: DocumentNode, widest: int) -> GraphQLError | None:
    """The first object literal with more fields than any input type has (one error, not one per field:
    the spec's rules would print the literal in each), found in one walk of the document."""
    stack: list[object] = list(document.definitions)
    while stack:
        node = stack.pop()
        if isinstance(node, ObjectValueNode) and len(node.fields) > widest:
            return GraphQLError(
                f"an object literal has {len(node.fields)} fields; no input type of this API has more than "
                f"{widest} (no setting)",
                node,
            )
        for key in getattr(node, "keys", ()):
            if key == "loc":
                continue
            child = getattr(node, key, None)
            if isinstance(child, tuple | list):
                stack.extend(c for c in child if isinstance(c, Node))
            elif isinstance(child, Node):
                stack.append(child)
    return None


def shape_errors(
    document: DocumentNode, limits: DocumentLimits, *, anonymous: bool, widest: int | None = None
) -> list[GraphQLError]:
    """An error for each operation over a limit of its shape (none when all fit); an object literal wider
    than any input type (`widest`) is one error for the document."""
    if widest is not None and (problem := literal_problem(document, widest)) is not None:
        return [problem]
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    shapes = DocumentShape(fragments)
    overlap = SetOverlap(fragments, limits)
    errors = []
    for node in document.definitions:
        if not isinstance(node, OperationDefinitionNode):
            continue
        message = _over_limit(shapes.of_set(node.selection_set), limits, anonymous=anonymous)
        if message is None:
            message = overlap.problem(node.selection_set)
        if message is not None:
            name = node.name.value if node.name else "anonymous"
            errors.append(GraphQLError(f"'{name}': {message}", node))
    return errors


def _over_limit(shape: Shape, limits: DocumentLimits, *, anonymous: bool) -> str | None:
    if shape.fields > limits.max_fields:
        return (
            f"selects {shape.fields} fields (fragments expanded, duplicates counted), over the limit of "
            f"{limits.max_fields} ({limits.setting('FIELDS', anonymous=anonymous)})"
        )
    if shape.depth > limits.max_depth:
        return f"exceeds maximum operation depth of {limits.max_depth} (no setting)"
    if shape.aliases > limits.max_aliases:
        return f"has {shape.aliases} aliases, over the limit of {limits.max_aliases} (no setting)"
    return None


class DocumentShapeLimits(SchemaExtension):
    """Refuses a document over its shape limits before the spec's rules walk it (they then do not run)."""

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        caller, document = context.context, context.graphql_document
        # a document that passed every rule once (schema/shared_validation.py) is not judged again
        if isinstance(caller, Context) and document is not None and context.pre_execution_errors is None:
            anonymous = caller.is_anonymous()
            limits = DocumentLimits.for_caller(caller.settings, anonymous=anonymous)
            try:
                widest = widest_input(context.schema._schema)
                errors = shape_errors(document, limits, anonymous=anonymous, widest=widest)
            except RecursionError:  # nested deeper than Python's stack: far past the depth limit
                errors = [GraphQLError(f"exceeds maximum operation depth of {limits.max_depth} (no setting)")]
            if errors:
                context.pre_execution_errors = errors
        yield

"""At most one media upload per document: each one is a decode, so ten aliases would be ten decodes.

A validation rule, so a document asking for more is refused (GRAPHQL_VALIDATION_FAILED) before any
resolver runs or any file is read. Fragments are followed. Which fields upload is read from the schema: a
mutation with a required `Upload` argument, or a required input with a required `Upload` field, always counts
(proofPhotoSubmit, submitPhoto), one whose `Upload` is optional counts when the document may pass it
(reviewRequest or requestReview with a photo; an input given as a variable may hold one, so it counts), so a
new upload mutation is counted without being listed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLArgument,
    GraphQLError,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLNonNull,
    GraphQLSchema,
    InlineFragmentNode,
    ObjectValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationRule,
    get_named_type,
)

MAX_MEDIA_UPLOADS = 1
UPLOAD_SCALAR = "Upload"


@dataclass(frozen=True)
class UploadArguments:
    required: bool  # an Upload argument (or field of a required input) is non-null: it always uploads
    names: frozenset[str]  # its Upload arguments: passing one uploads
    inputs: dict[str, frozenset[str]]  # input arguments -> their optional Upload fields


def _is_upload(spec: GraphQLArgument | GraphQLInputField) -> bool:
    return bool(get_named_type(spec.type).name == UPLOAD_SCALAR)


def _upload_fields_of(spec: GraphQLArgument) -> dict[str, bool]:
    """An input argument's Upload fields, each with whether it is required."""
    named = get_named_type(spec.type)
    if not isinstance(named, GraphQLInputObjectType):
        return {}
    fields = named.fields.items()
    return {name: isinstance(field.type, GraphQLNonNull) for name, field in fields if _is_upload(field)}


@lru_cache(maxsize=8)
def upload_fields(schema: GraphQLSchema) -> dict[str, UploadArguments]:
    """The mutations that take an `Upload`, by field name (read once per schema)."""
    mutation = schema.mutation_type
    fields: dict[str, UploadArguments] = {}
    for name, field in (mutation.fields if mutation is not None else {}).items():
        uploads = {arg: spec for arg, spec in field.args.items() if _is_upload(spec)}
        required = any(isinstance(spec.type, GraphQLNonNull) for spec in uploads.values())
        inputs: dict[str, frozenset[str]] = {}
        for arg, spec in field.args.items():
            nested = _upload_fields_of(spec)
            required = required or (isinstance(spec.type, GraphQLNonNull) and any(nested.values()))
            if nested:
                inputs[arg] = frozenset(upload for upload, needed in nested.items() if not needed)
        if uploads or inputs:
            fields[name] = UploadArguments(required, frozenset(uploads), inputs)
    return fields


class OneMediaUploadPerDocument(ValidationRule):
    def enter_operation_definition(self, node: OperationDefinitionNode, *_args: Any) -> None:
        self._uploads = upload_fields(self.context.schema)
        count = self._count(node.selection_set, set())
        if count > MAX_MEDIA_UPLOADS:
            self.report_error(
                GraphQLError(
                    f"a document may upload at most {MAX_MEDIA_UPLOADS} photo or video; this one has {count}",
                    node,
                )
            )

    def _count(self, selections: SelectionSetNode | None, fragments_seen: set[str]) -> int:
        count = 0
        for selection in selections.selections if selections is not None else ():
            if isinstance(selection, FieldNode):
                count += self._is_upload(selection) + self._count(selection.selection_set, fragments_seen)
            elif isinstance(selection, InlineFragmentNode):
                count += self._count(selection.selection_set, fragments_seen)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.context.get_fragment(name)
                if fragment is not None and name not in fragments_seen:  # cycles are another rule's error
                    count += self._count(fragment.selection_set, fragments_seen | {name})
        return count

    def _is_upload(self, field: FieldNode) -> int:
        uploads = self._uploads.get(field.name.value)
        if uploads is None:
            return 0
        if uploads.required:
            return 1
        for arg in field.arguments or ():
            name = arg.name.value
            if name in uploads.names:
                return 1
            optional = uploads.inputs.get(name)
            if optional and (
                not isinstance(arg.value, ObjectValueNode)  # a variable: what it holds is not known yet
                or any(item.name.value in optional for item in arg.value.fields)
            ):
                return 1
        return 0

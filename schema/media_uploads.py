"""At most one media upload per document: each one is a decode, so ten aliases would be ten decodes.

A validation rule, so a document asking for more is refused (GRAPHQL_VALIDATION_FAILED) before any
resolver runs or any file is read. Fragments are followed; requestReview counts when it carries a photo.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationRule,
)

MAX_MEDIA_UPLOADS = 1
_UPLOAD_FIELDS = {"submitPhoto": None, "submitVideo": None, "requestReview": "photo"}


class OneMediaUploadPerDocument(ValidationRule):
    def enter_operation_definition(self, node: OperationDefinitionNode, *_args: Any) -> None:
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
                count += _is_upload(selection) + self._count(selection.selection_set, fragments_seen)
            elif isinstance(selection, InlineFragmentNode):
                count += self._count(selection.selection_set, fragments_seen)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.context.get_fragment(name)
                if fragment is not None and name not in fragments_seen:  # cycles are another rule's error
                    count += self._count(fragment.selection_set, fragments_seen | {name})
        return count


def _is_upload(field: FieldNode) -> int:
    name = field.name.value
    if name not in _UPLOAD_FIELDS:
        return 0
    argument = _UPLOAD_FIELDS[name]
    return int(argument is None or any(arg.name.value == argument for arg in field.arguments or ()))

"""Times every GraphQL query and mutation into proofloop_graphql_operation_duration_seconds."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

from strawberry.extensions import SchemaExtension
from strawberry.types.graphql import OperationType

from observability.metrics import GRAPHQL_DURATION

# operation names come from clients: a bounded set keeps the label's cardinality (and memory) bounded
MAX_OPERATION_NAMES = 200
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_seen_names: set[str] = set()


def operation_label(name: str | None) -> str:
    if not name:
        return "anonymous"
    if not _NAME.fullmatch(name):
        return "other"
    if name not in _seen_names and len(_seen_names) >= MAX_OPERATION_NAMES:
        return "other"
    _seen_names.add(name)
    return name


class OperationMetrics(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        yield
        elapsed = time.perf_counter() - started
        context = self.execution_context
        try:
            kind = context.operation_type
        except RuntimeError:  # the document did not parse
            kind = None
        if kind is OperationType.SUBSCRIPTION:
            return  # a subscription lives as long as its socket: open_subscriptions covers it
        GRAPHQL_DURATION.labels(
            operation_name=operation_label(context.operation_name),
            operation_type=kind.value if kind is not None else "invalid",
        ).observe(elapsed)

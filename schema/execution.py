"""The execution context every operation runs with: Strawberry's, made safe for long subscriptions."""

from __future__ import annotations

from typing import Any

from graphql.execution.executor import Executor
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext


class ProofloopExecutionContext(StrawberryGraphQLCoreExecutionContext):
    def build_per_event_executor(self, payload: Any) -> Executor[Any]:
        executor = super().build_per_event_executor(payload)
        # graphql-core 3.3.2 shares the subfield memo with the subscription, keyed by per-event list ids:
        # without a memo of its own, each pushed event leaves an entry behind for the subscription's life
        executor._relevant_sub_fields = {}
        return executor

"""The execution context every operation runs with: Strawberry's, made safe for long subscriptions, and
able to do a document of many taskCreate (or createTask) fields as one set.

A mutation's fields run one after another (the spec's serial execution). A client creating 30 tasks in
one document would then pay 30 transactions. When every field of a mutation is one of `TOGETHER`'s,
their arguments are read first and the whole set is done in one call, with exactly the results serial
execution would give: each field then completes with its own result, or raises its own refusal, in
document order, and the fields after a refusal are neither created nor resolved.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

from graphql import GraphQLError, GraphQLObjectType
from graphql.execution.collect_fields import FieldDetailsList, GroupedFieldSet
from graphql.execution.executor import Executor, to_nodes
from graphql.execution.values import get_argument_values
from graphql.pyutils import AwaitableOrValue, Path
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.types.arguments import convert_arguments

from observability.outages import report_failure
from resolvers.tasks import create_tasks_together, task_payloads_together
from schema.context import Context
from schema.input_guards import check_argument
from services.kit import ProofloopError

log = logging.getLogger("proofloop.graphql")

# field -> done as a set: (context, each field's converted arguments) -> (results in order, the refusal)
SetResolver = Callable[[Context, list[dict[str, Any]]], Awaitable[tuple[list[Any], ProofloopError | None]]]
TOGETHER: dict[str, SetResolver] = {
    "taskCreate": task_payloads_together,
    "createTask": create_tasks_together,
}


class ProofloopExecutionContext(StrawberryGraphQLCoreExecutionContext):
    # root response name -> the result (or refusal) its field completes with, from a set done up front
    _prepared: dict[str, Any] | None = None

    def build_per_event_executor(self, payload: Any) -> Executor[Any]:
        executor = super().build_per_event_executor(payload)
        # graphql-core 3.3.2 shares the subfield memo with the subscription, keyed by per-event list ids:
        # without a memo of its own, each pushed event leaves an entry behind for the subscription's life
        executor._relevant_sub_fields = {}
        return executor

    def execute_fields_serially(
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        grouped_field_set: GroupedFieldSet,
        position_context: Any,
    ) -> AwaitableOrValue[dict[str, Any]]:
        if isinstance(self.context_value, Context):  # only a mutation's fields run serially
            self.context_value.mutation_starts()
        serially = super().execute_fields_serially
        names = {details[0].node.name.value for details in grouped_field_set.values()}
        together = TOGETHER.get(names.pop()) if len(names) == 1 and len(grouped_field_set) > 1 else None
        if together is None:
            return serially(parent_type, source_value, path, grouped_field_set, position_context)

        async def prepared_then_serially() -> dict[str, Any]:
            self._prepared = await self._prepare(parent_type, grouped_field_set, together)
            result = serially(parent_type, source_value, path, grouped_field_set, position_context)
            if self.is_awaitable(result):
                result = await cast("Awaitable[dict[str, Any]]", result)
            return cast("dict[str, Any]", result)

        return prepared_then_serially()

    async def _prepare(
        self, parent_type: GraphQLObjectType, grouped_field_set: GroupedFieldSet, together: SetResolver
    ) -> dict[str, Any]:
        """Each field's result or refusal, by response name; {} leaves every field to run on its own."""
        context: Context = self.context_value
        try:
            if await context.session_or_none() is None:
                return {}  # the first field's permission check refuses the caller
        except ProofloopError:
            return {}
        strawberry_schema = self.schema._strawberry_schema  # type: ignore[attr-defined]
        field_name = next(iter(grouped_field_set.values()))[0].node.name.value  # one field, by TOGETHER
        field_def = parent_type.fields[field_name]
        field = strawberry_schema.get_field_for_type(field_name, parent_type.name)
        names: list[str] = []
        arguments: list[dict[str, Any]] = []
        refusal: ProofloopError | None = None
        for response_name, details in grouped_field_set.items():
            first = details[0]
            try:
                raw = get_argument_values(
                    field_def,
                    first.node,
                    self.variable_values,
                    first.fragment_variable_values,
                    self.hide_suggestions,
                )
                for name, value in raw.items():
                    check_argument(value, name)  # schema/input_guards.ArgumentGuards, as a lone field gets
                converted = convert_arguments(
                    raw,
                    field.arguments,
                    scalar_registry=strawberry_schema.schema_converter.scalar_registry,
                    config=strawberry_schema.config,
                )
            except ProofloopError as exc:
                names.append(response_name)
                refusal = exc
                break
            except (GraphQLError, ValueError, TypeError):
                break  # this field and the rest run on their own, and say what is wrong themselves
            names.append(response_name)
            arguments.append(converted)
        try:
            results, stopped = await together(context, arguments)
        except Exception as exc:
            message = "a set of %s fields failed as one: they run one by one"
            report_failure(log, "task set", exc, message, len(arguments))
            return {}
        prepared: dict[str, Any] = dict(zip(names, results, strict=False))
        refused = stopped if stopped is not None else refusal
        if refused is not None:
            prepared[names[len(results)]] = refused
        return prepared

    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: FieldDetailsList,
        path: Path,
        position_context: Any,
    ) -> Any:
        if path.prev is not None or not self._prepared or path.key not in self._prepared:
            return super().execute_field(parent_type, source, field_details_list, path, position_context)
        # a root field of a set done up front: complete its result, or raise its refusal, at its place
        outcome = self._prepared.pop(str(path.key))
        field_def = parent_type.fields[field_details_list[0].node.name.value]
        return_type = field_def.type
        info = self.build_resolve_info(field_def, to_nodes(field_details_list), parent_type, path)
        try:
            if isinstance(outcome, Exception):
                raise outcome
            completed = self.complete_value(
                return_type, field_details_list, info, path, outcome, position_context
            )
            if self.is_awaitable(completed):

                async def await_completed() -> Any:
                    try:
                        return await completed
                    except Exception as raw_error:
                        self.handle_field_error(raw_error, return_type, field_details_list, path)
                        return None

                return await_completed()
            return completed
        except Exception as raw_error:
            self.handle_field_error(raw_error, return_type, field_details_list, path)
            return None

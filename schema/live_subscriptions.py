"""Live subscriptions that do not keep Strawberry's per-operation machinery alive between events.

Strawberry streams a subscription from inside its extensions' hooks: every open subscription holds its
own instance of each schema extension, their suspended `on_operation`/`on_execute` generators, the
extensions runner and the executor's generators, ~125 objects the cyclic collector tracks (10,000
subscriptions made each full collection a pause of most of a second). Here a subscription document goes
through the same hooks while it starts (parse, validation, its operation and execute hooks, the field's
permission and argument checks, all of which decide whether it may run) and they end once its event
stream exists. Each event is then executed by graphql-core with the resolve middleware, its errors
logged (`process_errors`) and coded (`ErrorCodes`) as Strawberry's own stream does it: the same frames,
first results and ends on every transport. The one difference: `on_operation` hooks end when the
subscription starts, not when it ends (OperationMetrics skips subscriptions; MaskErrors masks per result).

On a socket whose sender takes subscriptions over (`Context.hands_off_live`), the resolver yields a
`Handoff` once its replay is done; the stream then ends with `HandedOff`, and the sender executes each
later event through its `LiveStream` (web/live_sender.py): no task, generator or executor left per
subscription.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any, cast

from graphql import ExecutionResult as GraphQLExecutionResult
from graphql import GraphQLError
from graphql.execution import Executor, create_source_event_stream
from graphql.execution.async_iterables import aclosing
from graphql.execution.middleware import MiddlewareManager
from strawberry.exceptions import MissingQueryError
from strawberry.extensions import SchemaExtension
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.schema.schema import (
    DEFAULT_ALLOWED_OPERATION_TYPES,
    _coerce_error,
    _coerce_pre_execution_error,
)
from strawberry.types import ExecutionContext, ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType

from realtime.subscribers import Handoff, LiveFeed, Subscriber
from schema.errors import ErrorCodes, LoggedErrorsSchema, coded_errors
from schema.input_guards import ArgumentGuards
from schema.parse_cache import is_subscription, valid_documents

# resolve hooks that keep no state of their own: one instance serves every live subscription's events
STATELESS_RESOLVE_HOOKS: tuple[type[SchemaExtension], ...] = (ArgumentGuards,)

Started = tuple[AsyncIterator[Any], Executor[Any], ExecutionContext]


class LiveStream:
    """How a handed-off subscription's events are executed: its executor (document, variables, the
    socket's context) and its execution context. Subscriptions of one socket that sent the same document
    with the same variables share one, so an event they all receive is executed once."""

    __slots__ = ("_execution_context", "_executor", "_schema")

    def __init__(
        self, schema: ProofloopSchema, executor: Executor[Any], execution_context: ExecutionContext
    ) -> None:
        self._schema = schema
        self._executor = executor
        self._execution_context = execution_context

    @property
    def context(self) -> Any:
        return self._execution_context.context

    async def execute(self, payload: object) -> ExecutionResult:
        """One event's result, as Strawberry's stream would have given it (errors logged, then coded)."""
        result = self._executor.build_per_event_executor(payload).execute_operation(False)
        if self._executor.is_awaitable(result):
            result = await result
        return self._schema._coded(cast("GraphQLExecutionResult", result), self._execution_context)

    def ended(self, error: Exception) -> ExecutionResult:
        """The result a subscription ending with `error` sends last."""
        failed = GraphQLExecutionResult(data=None, errors=[_coerce_error(error)])
        return self._schema._coded(failed, self._execution_context)


@dataclass(frozen=True, slots=True)
class HandedOff:
    """The last item of a subscription's result stream when its socket's sender carries it on."""

    subscriber: Subscriber
    feed: LiveFeed
    stream: LiveStream


def _overrides(extension: SchemaExtension, hook: str) -> bool:
    return getattr(type(extension), hook) is not getattr(SchemaExtension, hook)


def check_live_hooks(extensions: Iterable[SchemaExtension]) -> None:
    """Refuse, at start-up, an extension whose hooks the live path would skip between events."""
    for extension in extensions:
        name = type(extension).__name__
        if _overrides(extension, "get_results"):
            raise TypeError(f"{name}.get_results would not be asked for each live event")
        if _overrides(extension, "on_stream_result") and not isinstance(extension, ErrorCodes):
            raise TypeError(f"{name}.on_stream_result would not run for each live event")
        if extension._implements_resolve() and not isinstance(extension, STATELESS_RESOLVE_HOOKS):
            raise TypeError(f"{name}.resolve keeps state: list it in STATELESS_RESOLVE_HOOKS only if not")


class ProofloopSchema(LoggedErrorsSchema):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        extensions = self.get_extensions()
        check_live_hooks(extensions)
        self._live_middleware = MiddlewareManager(*(e for e in extensions if e._implements_resolve()))

    async def stream(  # Strawberry's signature
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Any | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        operation_extensions: dict[str, Any] | None = None,
        allowed_operation_types: Iterable[OperationType] | None = None,
    ) -> AsyncGenerator[ExecutionResult, None]:
        allowed = tuple(
            DEFAULT_ALLOWED_OPERATION_TYPES if allowed_operation_types is None else allowed_operation_types
        )
        documents = valid_documents(context_value)
        settings = getattr(context_value, "settings", None)
        lean = (
            documents is not None
            and getattr(settings, "subscription_path", "socket") in ("socket", "lean")
            and OperationType.SUBSCRIPTION in allowed
            and await is_subscription(query, operation_name, documents)
        )
        if not lean:
            return cast(
                "AsyncGenerator[ExecutionResult, None]",
                await super().stream(
                    query,
                    variable_values=variable_values,
                    context_value=context_value,
                    root_value=root_value,
                    operation_name=operation_name,
                    operation_extensions=operation_extensions,
                    allowed_operation_types=allowed_operation_types,
                ),
            )
        execution_context = self._create_execution_context(
            query=query,
            allowed_operation_types=allowed,
            variable_values=variable_values,
            context_value=context_value,
            root_value=root_value,
            operation_name=operation_name,
            operation_extensions=operation_extensions,
        )
        started = await self._start(execution_context, operation_extensions)
        if isinstance(started, ExecutionResult):
            return _only(started)
        # a HandedOff, the last item, reaches only the transport that asked for it (hands_off_live)
        return cast("AsyncGenerator[ExecutionResult, None]", self._live_events(*started))

    async def _start(
        self, execution_context: ExecutionContext, operation_extensions: dict[str, Any] | None
    ) -> ExecutionResult | Started:
        """Strawberry's `_stream` up to the subscription's event stream: its result when it ends there."""
        extensions = self.get_extensions()
        for extension in extensions:
            extension.execution_context = execution_context
        runner = self.create_extensions_runner(execution_context, extensions)
        async with runner.operation():
            try:
                initial_error = await self._prepare_operation_async(execution_context, runner)
            except (MissingQueryError, CannotGetOperationTypeError, InvalidOperationTypeError) as error:
                initial_error = PreExecutionError(data=None, errors=[_coerce_pre_execution_error(error)])
            if initial_error:
                initial_error.extensions = await runner.get_extensions_results(execution_context)
                return await self._ended(execution_context, runner, initial_error)
            try:
                async with runner.executing():
                    started = await self._event_stream(execution_context, operation_extensions)
                if isinstance(started, list):
                    refused = PreExecutionError(data=None, errors=started)
                    return await self._ended(execution_context, runner, refused)
                return (*started, execution_context)
            except Exception as exc:  # as Strawberry's: the error is the result
                failed = GraphQLExecutionResult(data=None, errors=[_coerce_error(exc)])
                return await self._ended(execution_context, runner, failed)

    async def _event_stream(
        self, execution_context: ExecutionContext, operation_extensions: dict[str, Any] | None
    ) -> list[GraphQLError] | tuple[AsyncIterator[Any], Executor[Any]]:
        """graphql-core's `subscribe` without its mapping generator: the executor and the source stream."""
        assert execution_context.graphql_document is not None
        executor_class = cast("type[Executor[Any]]", self.execution_context_class)
        executor = executor_class.build(
            self._schema,
            execution_context.graphql_document,
            root_value=execution_context.root_value,
            context_value=execution_context.context,
            raw_variable_values=execution_context.variables,
            operation_name=execution_context.operation_name,
            middleware=self._live_middleware,
            operation_extensions=operation_extensions,
        )
        if isinstance(executor, list):
            return executor
        source = create_source_event_stream(executor)
        if executor.is_awaitable(source):
            source = await source
        if isinstance(source, GraphQLExecutionResult):
            return source.errors or []
        return cast("AsyncIterator[Any]", source), executor

    async def _ended(
        self,
        execution_context: ExecutionContext,
        runner: SchemaExtensionsRunner,
        result: GraphQLExecutionResult | ExecutionResult,
    ) -> ExecutionResult:
        handled = await self._handle_execution_result(execution_context, result, runner)
        async with runner.on_stream_result(handled):
            return handled

    async def _live_events(
        self, source: AsyncIterator[Any], executor: Executor[Any], execution_context: ExecutionContext
    ) -> AsyncGenerator[ExecutionResult | HandedOff, None]:
        stream = LiveStream(self, executor, execution_context)
        try:
            async with aclosing(source):
                async for payload in source:
                    if isinstance(payload, Handoff):
                        yield HandedOff(payload.subscriber, payload.feed, stream)
                        return
                    yield await stream.execute(payload)
        except Exception as exc:  # as Strawberry's: the resolver's ending error is the result
            yield stream.ended(exc)

    def _coded(self, result: GraphQLExecutionResult, execution_context: ExecutionContext) -> ExecutionResult:
        """One event's result as Strawberry's stream leaves it: errors logged, then coded."""
        errors = result.errors
        if errors:
            self._process_errors(errors, execution_context)
            errors = coded_errors(errors)
        return ExecutionResult(
            data=result.data, errors=errors, extensions=dict(execution_context.extensions_results)
        )


async def _only(result: ExecutionResult) -> AsyncGenerator[ExecutionResult, None]:
    yield result

"""schema/live_subscriptions.py: an extension whose hooks the lean live path would skip is refused at start."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from strawberry.extensions import SchemaExtension

from schema.live_subscriptions import check_live_hooks
from schema.schema import schema

pytestmark = pytest.mark.unit


class ResultsPerEvent(SchemaExtension):
    def get_results(self) -> dict[str, Any]:
        return {"seen": 1}


class StreamHook(SchemaExtension):
    def on_stream_result(self, result: Any) -> Iterator[None]:
        yield


class CountingResolve(SchemaExtension):
    def resolve(self, _next: Any, root: Any, info: Any, *args: Any, **kwargs: Any) -> Any:
        return _next(root, info, *args, **kwargs)


def test_the_schemas_own_extensions_pass() -> None:
    check_live_hooks(schema.get_extensions())


@pytest.mark.parametrize("extension", [ResultsPerEvent, StreamHook, CountingResolve])
def test_hooks_the_live_path_would_skip_are_refused(extension: type[SchemaExtension]) -> None:
    with pytest.raises(TypeError):
        check_live_hooks([extension()])

"""Query cost: a costly document, many aliases, and the refusal they get."""

from __future__ import annotations

import pytest

from harness.proofloop import ApiClient, GraphQLFailure

UPCOMING_ALIASES = " ".join(f"u{i}: upcoming(first: 100)" for i in range(29))


ATTACK = f"{{ tasks(first: 100) {{ edges {{ node {{ {UPCOMING_ALIASES} }} }} }} }}"


async def refused(
    api: ApiClient, token: str, document: str, variables: dict[str, object] | None = None
) -> str:
    with pytest.raises(GraphQLFailure) as failure:
        await api.execute(document, variables, token=token)
    assert failure.value.code == "GRAPHQL_VALIDATION_FAILED"
    return failure.value.message

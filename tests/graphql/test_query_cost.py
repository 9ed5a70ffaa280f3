"""The query cost rule over real HTTP: list sizes multiply through nesting; over the budget, nothing runs."""

from __future__ import annotations

import pytest

from harness.proofloop import ApiClient
from tests.support.backends import Deployment, both_backends
from tests.support.query_cost import ATTACK, UPCOMING_ALIASES, refused

BUDGET = 20_000  # PROOFLOOP_MAX_QUERY_COST's default


@pytest.fixture
def api(api_deployment: Deployment) -> ApiClient:
    return api_deployment.client()


@both_backends
async def test_the_upcoming_fan_out_is_refused_with_its_cost_and_the_budget(api: ApiClient) -> None:
    token, _ = await api.register()
    message = await refused(api, token, ATTACK)
    # 100 tasks x (edge + node + 29 aliases x 100 due times)
    assert f"query cost {100 * (1 + 1 + 1 + 29 * 100)} exceeds the budget of {BUDGET}" in message


async def test_sizes_given_as_variables_and_by_default_count_too(api: ApiClient) -> None:
    token, _ = await api.register()
    by_variable = f"query($n: Int) {{ tasks(first: $n) {{ edges {{ node {{ {UPCOMING_ALIASES} }} }} }} }}"
    await api.execute(by_variable, {"n": 1}, token=token)  # valid with these values (and remembered so)
    assert "exceeds the budget" in await refused(api, token, by_variable, {"n": 100})
    by_variable_default = by_variable.replace("$n: Int", "$n: Int = 100")
    assert "exceeds the budget" in await refused(api, token, by_variable_default)
    # no sizes written at all: tasks' 20 x instances' 20 x the verifications list, three times over
    nested = " ".join(
        f"a{i}: instances {{ edges {{ node {{ verifications {{ id status reason note }} }} }} }}"
        for i in range(3)
    )
    message = await refused(api, token, f"{{ tasks {{ edges {{ node {{ {nested} }} }} }} }}")
    assert "exceeds the budget" in message


async def test_fragments_are_costed_like_inline_selections(api: ApiClient) -> None:
    token, _ = await api.register()
    document = f"""
      query {{ tasks(first: 100) {{ edges {{ node {{ ...Due }} }} }} }}
      fragment Due on Task {{ {UPCOMING_ALIASES} }}
    """
    assert "exceeds the budget" in await refused(api, token, document)


async def test_ordinary_documents_run(api: ApiClient) -> None:
    token, _ = await api.register()
    document = """query {
      me { id }
      tasks(first: 100) { totalCount edges { cursor node { id title upcoming(first: 10)
        currentInstance { id status verifications { id } }
        instances(first: 20) { edges { node { id status } } } } } }
      events(first: 100) { id type task { title } }
    }"""
    data = await api.execute(document, token=token)
    assert data["tasks"]["totalCount"] == 0


async def test_depth_and_aliases_are_capped(api: ApiClient) -> None:
    token, _ = await api.register()
    path = ["tasks(first: 1)", "edges", "node", *["currentInstance", "task"] * 4]  # 11 levels, the cap is 10
    deep = "{ " + " { ".join(path) + " { id" + " }" * (len(path) + 1)
    assert "exceeds maximum operation depth" in await refused(api, token, deep)
    aliases = " ".join(f"a{n}: me {{ id }}" for n in range(31))  # the cap is 30
    assert "aliases" in await refused(api, token, f"{{ {aliases} }}")


async def test_last_is_priced_like_first_and_a_default_first_does_not_inflate_it(api: ApiClient) -> None:
    token, _ = await api.register()
    backward = f"{{ tasks(last: 100) {{ edges {{ node {{ {UPCOMING_ALIASES} }} }} }} }}"
    assert f"query cost {100 * (1 + 1 + 1 + 29 * 100)} exceeds" in await refused(api, token, backward)
    # `last: 3` is a page of 3 although `first` keeps its default of 20: 3 x (3 + 29 x 100) fits
    await api.execute(f"{{ tasks(last: 3) {{ edges {{ node {{ {UPCOMING_ALIASES} }} }} }} }}", token=token)
    by_default = f"{{ tasks {{ edges {{ node {{ {UPCOMING_ALIASES} }} }} }} }}"
    assert "exceeds the budget" in await refused(api, token, by_default)


async def test_connections_nested_in_connections_multiply_by_last_too(api: ApiClient) -> None:
    token, _ = await api.register()
    document = """{ tasks(last: 100) { edges { node { instances(last: 100) { edges { node {
      verificationsConnection(last: 100) { edges { node { id } } } } } } } } } }"""
    assert "exceeds the budget" in await refused(api, token, document)

"""A document validated once is not validated again, yet what depends on the request is still judged:
the same text's cost with other variables, and a text that differs by a character."""

from __future__ import annotations

from harness.proofloop import ApiClient
from tests.support.query_cost import UPCOMING_ALIASES, refused

BY_VARIABLE = f"query($n: Int) {{ tasks(first: $n) {{ edges {{ node {{ {UPCOMING_ALIASES} }} }} }} }}"


async def test_a_document_that_ran_is_still_priced_with_each_requests_variables(api: ApiClient) -> None:
    token, _ = await api.register()
    for _ in range(2):  # the second run skips the validation rules
        assert (await api.execute(BY_VARIABLE, {"n": 1}, token=token))["tasks"] == {"edges": []}

    assert "exceeds the budget" in await refused(api, token, BY_VARIABLE, {"n": 100})


async def test_a_valid_documents_invalid_variant_is_still_refused(api: ApiClient) -> None:
    token, _ = await api.register()
    valid = "query { me { id } }"
    await api.execute(valid, token=token)
    await api.execute(valid, token=token)

    message = await refused(api, token, valid.replace("id", "nope"))
    assert "nope" in message

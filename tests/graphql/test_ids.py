"""The id codec: global ids of every type, bare keys, and event ids only this server's secret opens."""

from __future__ import annotations

import pytest

from services.kit.errors import NotFound
from services.kit.ids import decode_id, event_ids, global_id, parse_id, split_global_id

pytestmark = pytest.mark.unit

KEY = "c79b7dcc-2046-4d9c-ac44-e052c20135a3"  # fixed: every xdist process must collect the same ids


def test_a_global_id_names_its_type_and_key_and_a_bare_key_is_taken_too() -> None:
    task = global_id("Task", KEY)
    assert split_global_id(task) == ("Task", KEY)
    assert "=" not in task
    assert decode_id(task, "Task") == decode_id(KEY, "Task") == decode_id(KEY.upper(), "Task") == KEY
    assert parse_id(task, "task") == KEY


@pytest.mark.parametrize(
    "value",
    [global_id("User", KEY), global_id("Task", "12"), "", "not an id", "x" * 500, "Task:" + KEY, "\u00e9"],
)
def test_anything_else_names_nothing(value: str) -> None:
    assert decode_id(value, "Task") is None
    with pytest.raises(NotFound):
        parse_id(value, "task")


def test_event_ids_open_only_with_the_secret_that_made_them() -> None:
    ids, other = event_ids("one secret"), event_ids("another secret")
    made = [ids.encode(position) for position in (0, 1, 2, 47, 2**63 - 1)]
    assert [ids.decode(made_id) for made_id in made] == [0, 1, 2, 47, 2**63 - 1]
    assert all(other.decode(made_id) is None for made_id in made)
    assert ids.decode("47") is None and ids.decode(global_id("VerificationEvent", "0" * 32)) is None


def test_consecutive_event_ids_share_nothing_that_orders_them() -> None:
    ids = event_ids("a secret")
    keys = [split_global_id(ids.encode(position)) for position in range(1, 200)]
    assert all(key is not None and key[0] == "VerificationEvent" for key in keys)
    texts = [key[1] for key in keys if key is not None]
    assert sorted(texts) != texts and len(set(texts)) == len(texts)

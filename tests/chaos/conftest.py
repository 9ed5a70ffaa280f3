"""Chaos fixtures: one private PostgreSQL cluster for the module (initdb costs seconds), and for each test
a database of its own on it and a private redis-server of its own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from harness.private_services import PrivatePostgres, PrivateRedis


@pytest.fixture(scope="module")
def private_pg() -> Iterator[PrivatePostgres]:
    with PrivatePostgres() as pg:
        yield pg


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    with PrivateRedis() as server:
        yield server


@pytest.fixture
def database_name() -> str:
    return f"chaos_{uuid.uuid4().hex[:10]}"

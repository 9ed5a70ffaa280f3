"""The API process's resources: opened by app.py's lifespan, read from each request's state.

Starlette copies the lifespan's state into every request and websocket (`scope["state"]`), so a
handler or the GraphQL context reaches them through the connection, never through a module global.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import redis.asyncio as aioredis
from starlette.requests import HTTPConnection
from tortoise.backends.base.client import BaseDBAsyncClient

from policies.api import ApiPolicies
from realtime.hub import Hub
from schema.parse_cache import ValidDocuments
from services.accounts import PasswordHashing
from services.kit import NameLookups
from services.proofs import DecodeGate
from settings import Settings
from storage import ArchiveStore, BlobStore


@dataclass(frozen=True)
class ApiResources:
    settings: Settings
    database: BaseDBAsyncClient  # Tortoise's default connection (services reach it as kit.db.connection)
    redis: aioredis.Redis  # the process's general client (services reach it in realtime/redis_client.py)
    hub: Hub  # the live fan-out: one pub/sub connection, every subscription of this process
    passwords: PasswordHashing  # argon2's bounded thread pool
    decode_gate: DecodeGate  # the bound on concurrent media decodes
    documents: ValidDocuments  # parsed documents that passed validation, within a budget of bytes
    name_lookups: NameLookups  # webhook hosts resolved at registration, on threads of their own
    media_store: BlobStore  # proofs' media: files under the data dir, or an S3 bucket
    archives: ArchiveStore  # data exports' archives: the data dir, or the media store's S3 bucket
    policies: ApiPolicies  # the settings turned into what the services take (policies.py)


class ApiState(TypedDict):
    resources: ApiResources


def resources_of(connection: HTTPConnection) -> ApiResources:
    resources = getattr(connection.state, "resources", None)
    if not isinstance(resources, ApiResources):
        raise RuntimeError("the API's resources are opened by its lifespan (app.py), which has not run")
    return resources

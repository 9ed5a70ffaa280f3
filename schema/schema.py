"""The schema: Query, Mutation and Subscription composed from the resolver mixins."""

from __future__ import annotations

import strawberry
from strawberry.extensions import MaxAliasesLimiter, QueryDepthLimiter
from strawberry.schema.config import StrawberryConfig

from resolvers.accounts import AccountMutations, AccountQueries
from resolvers.tasks import TaskMutations, TaskQueries
from schema.errors import ErrorCodes
from schema.scalars import SCALAR_OVERRIDES

MAX_DEPTH = 10
MAX_ALIASES = 30


@strawberry.type
class Query(AccountQueries, TaskQueries):
    pass


@strawberry.type
class Mutation(AccountMutations, TaskMutations):
    pass


schema = strawberry.Schema(
    query=Query,
    mutation=Mutation,
    scalar_overrides=SCALAR_OVERRIDES,  # type: ignore[arg-type]
    config=StrawberryConfig(auto_camel_case=True),
    extensions=[
        lambda: QueryDepthLimiter(max_depth=MAX_DEPTH),
        lambda: MaxAliasesLimiter(max_alias_count=MAX_ALIASES),
        ErrorCodes,
    ],
)

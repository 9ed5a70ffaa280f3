"""The schema: Query, Mutation and Subscription composed from the resolver mixins."""

from __future__ import annotations

import strawberry
from strawberry.extensions import AddValidationRules
from strawberry.schema.config import StrawberryConfig

from resolvers.accounts import (
    AccountMutations,
    AccountQueries,
    ExportMutations,
    ExportQueries,
    FirstAccountMutations,
    FirstExportMutations,
)
from resolvers.agenda import AgendaQueries
from resolvers.events import EventQueries, EventSubscriptions
from resolvers.nodes import NodeQueries
from resolvers.partners import FirstPartnerMutations, PartnerMutations, PartnerQueries
from resolvers.progress import ProgressQueries
from resolvers.proofs import FirstProofMutations, ProofMutations
from resolvers.push import PushMutations, PushQueries
from resolvers.reviews import FirstReviewMutations, ReviewMutations, ReviewQueries
from resolvers.tasks import FirstTaskMutations, TaskMutations, TaskQueries
from resolvers.webhooks import FirstWebhookMutations, WebhookMutations, WebhookQueries
from schema.bounded_validation import BoundedValidation
from schema.document_shape import DocumentShapeLimits
from schema.errors import ErrorCodes
from schema.execution import ProofloopExecutionContext
from schema.input_guards import ArgumentGuards
from schema.live_subscriptions import ProofloopSchema
from schema.media_uploads import OneMediaUploadPerDocument
from schema.metrics_extension import OperationMetrics
from schema.parse_cache import SharedParses
from schema.query_cost import QueryCostLimiter
from schema.scalars import SCALAR_OVERRIDES
from schema.shared_validation import SharedValidation


@strawberry.type
class Query(
    AccountQueries,
    TaskQueries,
    EventQueries,
    PartnerQueries,
    ReviewQueries,
    ProgressQueries,
    AgendaQueries,
    ExportQueries,
    WebhookQueries,
    PushQueries,
    NodeQueries,
):
    pass


@strawberry.type
class Mutation(
    # each mutation in one shape: `input:` and a payload with its result and userErrors
    AccountMutations,
    TaskMutations,
    PartnerMutations,
    ProofMutations,
    ReviewMutations,
    WebhookMutations,
    PushMutations,
    ExportMutations,
    # the first shape, deprecated (docs/schema/changes.md): kept working until its removal date
    FirstAccountMutations,
    FirstTaskMutations,
    FirstPartnerMutations,
    FirstProofMutations,
    FirstReviewMutations,
    FirstWebhookMutations,
    FirstExportMutations,
):
    pass


@strawberry.type
class Subscription(EventSubscriptions):
    pass


schema = ProofloopSchema(
    query=Query,
    mutation=Mutation,
    subscription=Subscription,
    execution_context_class=ProofloopExecutionContext,
    scalar_overrides=SCALAR_OVERRIDES,
    config=StrawberryConfig(auto_camel_case=True),
    extensions=[
        # thousands of subscriptions send the same few documents: one parse, one shared AST each
        SharedParses,
        OperationMetrics,
        # a document that passed the rules below once is not judged by them again
        SharedValidation,
        # depth, aliases, fields, duplicates: linear, and before the spec's rules that are not
        DocumentShapeLimits,
        lambda: AddValidationRules([OneMediaUploadPerDocument]),
        BoundedValidation,  # the spec's rules, at most 20 errors, each message at most 1,000 characters
        QueryCostLimiter,  # its budget is PROOFLOOP_MAX_QUERY_COST, read from the request's settings
        ArgumentGuards,
        ErrorCodes,
    ],
)

"""Apollo's multipart subscriptions as Strawberry streams them, answered with the one media type they use."""

from __future__ import annotations

from collections.abc import Mapping

from strawberry.http.streaming import MultipartSubscriptionTransport

# the response's type is the protocol's, not the client's Accept list (Strawberry appends `,application/json`)
MULTIPART_SUBSCRIPTION_CONTENT_TYPE = "multipart/mixed;boundary=graphql;subscriptionSpec=1.0"


class MultipartSubscriptions(MultipartSubscriptionTransport):
    @property
    def headers(self) -> Mapping[str, str]:
        return {"Content-Type": MULTIPART_SUBSCRIPTION_CONTENT_TYPE}

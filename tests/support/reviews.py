"""Partner reviews: requesting one, deciding it, reading the queue."""

from __future__ import annotations

from typing import Any

from harness.proofloop import (
    ApiClient,
    file_var,
    upload,
)

REQUEST = """mutation($id: ID!, $note: String, $photo: Upload) {
  requestReview(instanceId: $id, note: $note, photo: $photo) {
    id status reason method note mediaUrl
    instance { id status dueAt reviewDeadline }
  }
}"""


REVIEW = """mutation($id: ID!, $approve: Boolean!, $comment: String) {
  review(verificationId: $id, approve: $approve, comment: $comment) {
    id status reason decidedAt reviewComment reviewer { id } instance { status settledAt }
  }
}"""


QUEUE = "query($first: Int) { reviewQueue(first: $first) { id note instance { id } } }"


async def request_review(
    api: ApiClient, token: str, instance_id: str, note: str | None = None, photo: bytes | None = None
) -> dict[str, Any]:
    variables: dict[str, Any] = {"id": instance_id, "note": note}
    if photo is not None:
        variables["photo"] = file_var(photo)
        return dict((await upload(api, REQUEST, variables, token=token))["requestReview"])
    return dict((await api.execute(REQUEST, variables, token=token))["requestReview"])


async def review(api: ApiClient, token: str, verification_id: str, approve: bool) -> dict[str, Any]:
    variables = {"id": verification_id, "approve": approve, "comment": "seen it"}
    return dict((await api.execute(REVIEW, variables, token=token))["review"])


async def queue(api: ApiClient, token: str, first: int | None = None) -> list[dict[str, Any]]:
    return list((await api.execute(QUEUE, {"first": first}, token=token))["reviewQueue"])

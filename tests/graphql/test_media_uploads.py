"""Which mutations upload is read from the schema, so the one-upload rule counts a new upload mutation
without a list to keep in step; and the rule's count, run by graphql-core's validation on the real schema."""

from __future__ import annotations

import pytest
from graphql import parse, validate

from schema.media_uploads import OneMediaUploadPerDocument, UploadArguments, upload_fields
from schema.schema import schema

pytestmark = pytest.mark.unit

GRAPHQL_SCHEMA = schema._schema


def refusals(document: str) -> list[str]:
    errors = validate(GRAPHQL_SCHEMA, parse(document), [OneMediaUploadPerDocument])
    return [error.message for error in errors]


def test_the_upload_mutations_are_found_in_the_schema() -> None:
    assert upload_fields(GRAPHQL_SCHEMA) == {
        "proofPhotoSubmit": UploadArguments(required=True, names=frozenset(), inputs={"input": frozenset()}),
        "proofVideoSubmit": UploadArguments(required=True, names=frozenset(), inputs={"input": frozenset()}),
        "reviewRequest": UploadArguments(
            required=False, names=frozenset(), inputs={"input": frozenset({"photo"})}
        ),
        "submitPhoto": UploadArguments(required=True, names=frozenset({"photo"}), inputs={}),
        "submitVideo": UploadArguments(required=True, names=frozenset({"video"}), inputs={}),
        "requestReview": UploadArguments(required=False, names=frozenset({"photo"}), inputs={}),
    }


def test_an_upload_inside_an_input_counts_when_it_is_required_or_may_be_passed() -> None:
    photo = "proofPhotoSubmit(input: {instanceId: $i, photo: $f}) { clientMutationId }"
    review = "reviewRequest(input: {instanceId: $i}) { clientMutationId }"
    with_photo = "reviewRequest(input: {instanceId: $i, photo: $f}) { clientMutationId }"
    as_variable = "reviewRequest(input: $r) { clientMutationId }"
    head = "mutation($i: ID!, $f: Upload!, $r: ReviewRequestInput!)"
    too_many = ["a document may upload at most 1 photo or video; this one has 2"]
    assert refusals(f"{head} {{ {photo} {review} }}") == []
    assert refusals(f"{head} {{ {photo} r: {with_photo} }}") == too_many
    assert refusals(f"{head} {{ {photo} r: {as_variable} }}") == too_many  # it may hold one


def test_a_required_upload_counts_and_an_optional_one_only_when_passed() -> None:
    photo = "submitPhoto(instanceId: $i, photo: $f) { id }"
    video = "submitVideo(instanceId: $i, video: $f) { id }"
    review = "requestReview(instanceId: $i) { id }"
    with_photo = "requestReview(instanceId: $i, photo: $f) { id }"
    head = "mutation($i: ID!, $f: Upload!)"
    assert refusals(f"{head} {{ {photo} {review} }}") == []
    assert refusals(f"{head} {{ a: {photo} b: {video} }}") == [
        "a document may upload at most 1 photo or video; this one has 2"
    ]
    assert refusals(f"{head} {{ {photo} r: {with_photo} }}") == [
        "a document may upload at most 1 photo or video; this one has 2"
    ]
    fragment = f"fragment V on Mutation {{ {video} }}"
    assert refusals(f"{head} {{ {photo} ...V }} {fragment}") == [
        "a document may upload at most 1 photo or video; this one has 2"
    ]

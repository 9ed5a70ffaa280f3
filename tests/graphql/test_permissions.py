"""Every root field declares who may call it (phoenix-style): a new field without a permission class fails."""

from __future__ import annotations

import pytest
from strawberry.types.base import get_object_definition

from resolvers.permissions import IsAuthenticated, Public
from schema.schema import Mutation, Query, Subscription

pytestmark = pytest.mark.unit

# the only root fields open to anonymous callers: opening another one is a decision made here
PUBLIC_FIELDS = {
    *("account_register", "session_create", "email_verify", "password_reset_request", "password_reset"),
    # the first shape of the same mutations
    *("register", "login", "verify_email", "request_password_reset", "reset_password"),
}


@pytest.mark.parametrize("root", [Query, Mutation, Subscription], ids=lambda root: root.__name__)
def test_every_root_field_has_a_permission_class(root: type) -> None:
    definition = get_object_definition(root, strict=True)
    assert definition.fields, root
    for field in definition.fields:
        name = f"{root.__name__}.{field.python_name}"
        classes = set(field.permission_classes)
        expected = {Public} if field.python_name in PUBLIC_FIELDS else {IsAuthenticated}
        assert classes == expected, f"{name} declares {classes or 'no permission class'}, not {expected}"

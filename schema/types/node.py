"""Relay's Node: every object a client refetches by its global id (services/kit/ids.py)."""

from __future__ import annotations

import strawberry


@strawberry.interface(description="an object with a global id: refetch it with node(id:)")
class Node:
    @strawberry.field(description="global id: pass it to node(id:) or to any argument taking this type's id")
    def id(self) -> strawberry.ID:
        raise NotImplementedError

"""The worker process's policies (policies.worker_policies), built once when the process starts and held
by a middleware, as every other resource of the worker is; actors read them through `worker_policies`."""

from __future__ import annotations

import dramatiq
from dramatiq.middleware import Middleware

from policies.worker import WorkerPolicies


class PolicyHolder(Middleware):
    def __init__(self, policies: WorkerPolicies) -> None:
        self.policies = policies


def worker_policies() -> WorkerPolicies:
    """This worker process's policies (its PolicyHolder middleware's)."""
    for middleware in dramatiq.get_broker().middleware:
        if isinstance(middleware, PolicyHolder):
            return middleware.policies
    raise RuntimeError("the worker has no PolicyHolder middleware")

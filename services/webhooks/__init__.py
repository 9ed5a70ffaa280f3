"""Owners' webhooks: registration with a checked address, the delivery outbox written with each reminder,
and the signed POSTs the workers send."""

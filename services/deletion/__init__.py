"""Account deletion: what the workers do once an account's grace period has passed."""

from __future__ import annotations

from services.deletion.deletion import delete_due_accounts

__all__ = ["delete_due_accounts"]

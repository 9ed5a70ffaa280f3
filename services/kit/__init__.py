"""Shared infrastructure every domain uses: transactions and after-commit hooks, messages sent after
commit, errors, ids, instants, keyset paging, rate limits, and the address checks for outbound calls."""

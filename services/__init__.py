"""The business operations, one package per domain (docs/architecture.md, "Code layout").

Each package is imported from outside through its `__init__`; packages import only those below them, in
the order import-linter holds (`[tool.importlinter]` in pyproject.toml): kit, then timers / schedules /
mail / media, accounts, partners, feed, webhooks, reminders, chain, tasks, proofs, exports, deletion."""

"""The per-task chain: plan an instance, settle it at its fire_at (row by row or as a set, on both SQL
dialects), and keep its link alive."""

"""Live events: Redis wake-ups between processes and fan-out to subscribers."""

"""Mail: messages rendered as text and HTML, queued in an outbox row, delivered after commit by a worker."""

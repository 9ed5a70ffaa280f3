"""GraphQL-facing functions: authenticate, authorize, validate, call services, map rows to types."""

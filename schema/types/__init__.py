"""GraphQL object types, separate from the rows they present."""

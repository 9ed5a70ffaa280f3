"""The GraphQL schema: types, inputs, enums, scalars and extensions."""

"""Business operations shared by resolvers and actors."""

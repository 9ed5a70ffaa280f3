"""Dramatiq broker setup and the chain's actors: thin wrappers around services."""

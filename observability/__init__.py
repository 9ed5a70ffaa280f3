"""Operational signals: Prometheus metrics for the API and the workers."""

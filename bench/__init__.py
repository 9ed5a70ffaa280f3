"""Benchmarks that print figures (`make bench` runs them all); not part of the test run."""

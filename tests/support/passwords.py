"""argon2's cost: the default settings' (the run itself hashes at the least cost, tests/conftest.py) and
the cost a stored hash was made at."""

from __future__ import annotations

from argon2 import extract_parameters

from settings import Settings

# the test run's cost (tests/conftest.py gives it to every command): argon2's least
QUICK_PASSWORD_COST = {"PROOFLOOP_PASSWORD_HASH_TIME_COST": "1", "PROOFLOOP_PASSWORD_HASH_MEMORY_KIB": "8"}
DEFAULT_PASSWORD_COST = {
    "PROOFLOOP_PASSWORD_HASH_TIME_COST": str(Settings.model_fields["password_hash_time_cost"].default),
    "PROOFLOOP_PASSWORD_HASH_MEMORY_KIB": str(Settings.model_fields["password_hash_memory_kib"].default),
}


def hash_cost(password_hash: str) -> tuple[int, int]:
    """(passes, KiB) that a stored argon2 hash was made with."""
    parameters = extract_parameters(password_hash)
    return parameters.time_cost, parameters.memory_cost

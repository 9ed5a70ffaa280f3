"""Each domain package's public surface (its `__all__`) names what outside code imports from it."""

from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

import services

pytestmark = pytest.mark.unit


def domain_packages() -> list[types.ModuleType]:
    return [
        importlib.import_module(f"services.{found.name}")
        for found in pkgutil.iter_modules(services.__path__)
        if found.ispkg
    ]


def test_no_public_name_is_shadowed_by_a_submodule_of_the_same_name() -> None:
    """Importing `services.pkg.name` sets the package's attribute `name` to that module, replacing a
    function of the same name that `__init__` re-exported: callers would get the module."""
    clashes = [
        f"{package.__name__}.{name}"
        for package in domain_packages()
        for name in getattr(package, "__all__", [])
        if name in {found.name for found in pkgutil.iter_modules(package.__path__)}
        or isinstance(getattr(package, name, None), types.ModuleType)
    ]
    assert clashes == []


def test_every_public_name_exists() -> None:
    missing = [
        f"{package.__name__}.{name}"
        for package in domain_packages()
        for name in getattr(package, "__all__", [])
        if not hasattr(package, name)
    ]
    assert missing == []

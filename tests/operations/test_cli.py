"""The `proofloop` command's help: every subcommand is listed and says what it does."""

from __future__ import annotations

import pytest

import cli
from harness.proofloop import run_cli

SUBCOMMANDS = ("dev", "serve", "worker", "migrate", "demo", "export-schema")


def test_help_lists_every_subcommand() -> None:
    out = run_cli(["--help"], {}).stdout
    for name in SUBCOMMANDS:
        assert f"    {name} " in out, f"{name} missing from:\n{out}"


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_each_subcommand_help_says_what_it_does(name: str) -> None:
    doc = (cli.build_parser().parse_args([name]).func.__doc__ or "").strip()
    assert len(doc.split()) >= 6, f"{name}: say what it does in its docstring"

    out = run_cli([name, "--help"], {}).stdout

    assert " ".join(doc.split()) in " ".join(out.split())

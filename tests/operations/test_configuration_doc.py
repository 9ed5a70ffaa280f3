"""docs/configuration.md is what settings.py generates, and every setting is documented there."""

from pathlib import Path

import pytest

from settings import Settings
from settings_doc import entries, render

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_every_setting_has_a_description_and_a_section() -> None:
    documented = {entry.name for entry in entries()}  # raises UndocumentedSetting for a bare field
    assert documented == set(Settings.model_fields)


def test_the_committed_page_is_what_settings_py_generates() -> None:
    assert DOC.read_text() == render(), "docs/configuration.md is stale: run `make docs` and commit it"


def test_each_variable_appears_once() -> None:
    text = render()
    for name in Settings.model_fields:
        assert text.count(f"`PROOFLOOP_{name.upper()}`") == 1, name

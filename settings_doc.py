"""docs/configuration.md, generated from settings.py: each `Settings` field, its variable, type and default.

`make docs` (`proofloop config-doc --output docs/configuration.md`) writes it; a unit test fails when the
committed file differs, so the page cannot drift from the code. Sections are the `# == Title` comments
inside `Settings`; every field needs a `Field(description=...)` and a section.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic.fields import FieldInfo

import settings
from settings import Settings

SECTION = re.compile(r"^\s*# == (?P<title>.+?)\s*$")

HEADER = """\
# Configuration

<!-- Generated from settings.py by `make docs`; edit the descriptions there, not here. -->

Every setting is an environment variable: `PROOFLOOP_` and the field's name in capitals (`settings.py`).
Lists are comma-separated. Where each limit applies and what a client then sees is in
[api.md](api.md#budgets-and-quotas); what to set in production is in [operations.md](operations.md).
"""


@dataclass(frozen=True)
class Entry:
    section: str
    name: str
    env: str
    type: str
    default: str
    description: str


class UndocumentedSetting(Exception):
    """A field without a description or outside every section."""


def _class_node() -> tuple[ast.ClassDef, list[str]]:
    source = inspect.getsource(settings)
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == Settings.__name__:
            return node, source.splitlines()
    raise LookupError("class Settings not found in settings.py")


def _type_text(annotation: ast.expr) -> str:
    text = ast.unparse(annotation)
    if text.startswith("Annotated[list[str]"):
        return "list (comma-separated)"
    literal = re.fullmatch(r"Literal\[(.*)\]", text)
    if literal:
        values = [v.strip().strip("'\"") for v in literal.group(1).split(",")]
        return " or ".join(f"`{v}`" for v in values)
    return text.replace("Path", "path").replace("str", "string").replace(" | None", ", optional")


def _default_text(info: FieldInfo, source: str | None) -> str:
    if info.default_factory is not None:
        return "empty"
    value = info.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, Path):
        return f"`{value.as_posix() if value.is_absolute() else './' + value.as_posix()}`"
    text = f"`{value}`"
    if source is not None and re.search(r"[*]", source):
        text += f" ({source})"
    return text


def entries() -> list[Entry]:
    node, lines = _class_node()
    fields = Settings.model_fields
    prefix = str(Settings.model_config.get("env_prefix", ""))
    markers = [
        (number, match.group("title"))
        for number, line in enumerate(lines[node.lineno - 1 : node.end_lineno], start=node.lineno)
        if (match := SECTION.match(line))
    ]
    found: list[Entry] = []
    for statement in node.body:
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        name = statement.target.id
        if name not in fields:
            continue
        info = fields[name]
        if not info.description:
            raise UndocumentedSetting(f"settings.py: {name} has no Field(description=...)")
        before = [title for number, title in markers if number < statement.lineno]
        if not before:
            raise UndocumentedSetting(f"settings.py: {name} comes before every `# == Section` comment")
        default_source = None
        call = statement.value
        if isinstance(call, ast.Call):
            default_source = next((ast.unparse(k.value) for k in call.keywords if k.arg == "default"), None)
        found.append(
            Entry(
                section=before[-1],
                name=name,
                env=prefix + name.upper(),
                type=_type_text(statement.annotation),
                default=_default_text(info, default_source),
                description=" ".join(info.description.split()),
            )
        )
    missing = set(fields) - {entry.name for entry in found}
    if missing:
        raise UndocumentedSetting(f"settings.py: fields not found in the class body: {sorted(missing)}")
    return found


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")


def render() -> str:
    """The text of docs/configuration.md."""
    all_entries = entries()
    sections: dict[str, list[Entry]] = {}
    for entry in all_entries:
        sections.setdefault(entry.section, []).append(entry)
    out = [HEADER]
    out.append(" · ".join(f"[{title}](#{_anchor(title)})" for title in sections) + "\n")
    for title, group in sections.items():
        out.append(f"## {title}\n")
        out.append("| variable | type | default | meaning |")
        out.append("|---|---|---|---|")
        for entry in group:
            cells = (f"`{entry.env}`", entry.type, entry.default, entry.description)
            out.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        out.append("")
    return "\n".join(out)

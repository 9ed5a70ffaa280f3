"""Text one user writes and others are shown: a display name, a task's title.

Bidirectional overrides, embeddings and isolates (U+202A..U+202E, U+2066..U+2069) reorder the text that
follows them wherever it is shown: "Ann‮gnp.exe" reads as "Annexe.png", and a name can make the rest of a
partner's notification line read backwards. Nothing a person's name or a task's title needs uses them
(right-to-left scripts are ordered by the characters themselves), so they are refused.
"""

from __future__ import annotations

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def reordering_character(text: str) -> str | None:
    """The first bidirectional control in `text`, as U+XXXX, or None."""
    found = next((c for c in text if c in BIDI_CONTROLS), None)
    return None if found is None else f"U+{ord(found):04X}"

"""The one rule for invisible characters, shared by every output (terminal, Markdown, the job
summary, the PR comment, annotations, JUnit, HTML).

A character of Unicode category Cf (format: zero-width spaces and joiners, soft hyphen, bidi
marks, embeddings, overrides and isolates, the BOM, interlinear annotation, tag characters …)
or a line/paragraph separator (U+2028, U+2029) can hide text, reorder what is read ("Trojan
Source") or smuggle instructions past a reviewer. In user text each one is written as
``\\u`` plus at least four lowercase hex digits (``\\u200b``, ``\\ue0041``): visible,
unambiguous, and never raw or a character reference. The category comes from ``unicodedata``
(Python's Unicode version), so a newly assigned format character is caught as soon as Python
knows it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

_SEPARATORS = frozenset("\u2028\u2029")


def escape_char(char: str) -> str:
    """``char`` as ``\\u`` and its code point in lowercase hex, at least four digits."""
    return f"\\u{ord(char):04x}"


def is_invisible(char: str) -> bool:
    """Whether ``char`` falls under the rule: category Cf, or U+2028/U+2029."""
    return char in _SEPARATORS or unicodedata.category(char) == "Cf"


def escape_table(text: str, also: Callable[[str], str | None] | None = None) -> dict[int, str]:
    """A ``str.translate`` table for ``text``: every invisible character escaped; ``also``
    gives the replacement of any other character a caller treats specially (None: keep it).
    One look per distinct character, so building it is linear however long the text."""
    table: dict[int, str] = {}
    for char in set(text):
        if is_invisible(char):
            table[ord(char)] = escape_char(char)
        elif also is not None:
            replacement = also(char)
            if replacement is not None:
                table[ord(char)] = replacement
    return table


def show_invisible(text: object) -> str:
    """``text`` with every invisible character written as ``\\uXXXX`` (all else unchanged)."""
    value = str(text)
    if value.isprintable():  # no Cf, Zl or Zp in it (nor any control): nothing to do
        return value
    return value.translate(escape_table(value))

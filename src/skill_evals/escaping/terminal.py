"""The one escaping function for text shown on a terminal (stderr, stdout text, progress).

Paths, skill names and case ids are user-controlled: an ESC could recolour or rewrite the
screen, a newline could forge a line (on GitHub Actions a line starting with ``::`` is a
workflow command), a bidi override could reorder what is read. Every such string printed for a
person goes through :func:`terminal_safe`.
"""

from __future__ import annotations

import unicodedata

from .invisible import escape_char, escape_table

# Besides the invisible characters (format characters, line/paragraph separators: the shared
# rule), controls (Cc) and lone surrogates (undecodable file-name bytes) are never written raw.
_CONTROLS = frozenset({"Cc", "Cs"})


def _control(char: str) -> str | None:
    return escape_char(char) if unicodedata.category(char) in _CONTROLS else None


def terminal_safe(text: object) -> str:
    """``text`` with every control, format and separator character shown as ``\\uXXXX``
    (lowercase hex, at least four digits), so it stays on one line and cannot drive the
    terminal."""
    value = str(text)
    if value.isprintable():  # the common case: nothing to escape (no Cc/Cf/Zl/Zp/Cs in it)
        return value
    return value.translate(escape_table(value, _control))

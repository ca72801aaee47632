"""The one escaping function for text shown on a terminal (stderr, stdout text, progress).

Paths, skill names and case ids are user-controlled: an ESC could recolour or rewrite the
screen, a newline could forge a line (on GitHub Actions a line starting with ``::`` is a
workflow command), a bidi override could reorder what is read. Every such string printed for a
person goes through :func:`terminal_safe`.
"""

from __future__ import annotations

import unicodedata

# Control (Cc), format (Cf: bidi overrides, zero-width chars), line/paragraph separators and
# lone surrogates (undecodable file-name bytes) are never written raw.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def terminal_safe(text: object) -> str:
    """``text`` with every control, format and separator character shown as ``\\uXXXX``
    (``\\UXXXXXXXX`` above U+FFFF), so it stays on one line and cannot drive the terminal."""
    value = str(text)
    if value.isprintable():  # the common case: nothing to escape (no Cc/Cf/Zl/Zp/Cs in it)
        return value
    # One look per distinct character, then one C-level pass: linear however long the text.
    table = {
        ord(char): _escape(char)
        for char in set(value)
        if unicodedata.category(char) in _ESCAPED_CATEGORIES
    }
    return value.translate(table)

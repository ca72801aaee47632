"""How text from a report is written into Markdown: escaped prose (:func:`escape_md`, the one
escaper of summary.md, the job summary and ``--markdown``) or, for the pull-request comment,
only the two forms that cannot carry a link, an image, an HTML tag or a mention.

The comment is posted under the base repository's identity from a report that a pull request
from a fork may have forged, and GitHub's renderer autolinks bare URLs, ``www.`` and e-mail
addresses and turns ``@name`` into a mention even when every Markdown character is escaped.
Inside a code span it does none of that: :func:`escape_md` writes every bare URL, ``www.``
host and e-mail address as one, and ``@`` too. While :func:`fork_safe` is active, every report
string is a code span unless it is exactly the name of a skill found in the checked-out base
repository (lowercase letters, digits and single hyphens: nothing GitHub can turn into a link).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

from ..escaping.invisible import escape_table

SKILL_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_NAME_CHARS = 64
# Line breaks of any kind become spaces in a code span (a newline could end the table row).
_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x1c-\x1e\x85]")
_TICKS = re.compile(r"`+")

# The base repository's skill names while the comment is rendered; None: ordinary Markdown.
_NAMES: ContextVar[frozenset[str] | None] = ContextVar("skill_evals_comment_names", default=None)


def _span_char(char: str) -> str | None:
    code = ord(char)
    if char == "\t":
        return " "
    if char == "|":
        return "\\|"  # a table cell would end here; GitHub reads \| as | even in code
    if code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF:
        return ""  # other controls and lone surrogates carry no text
    return None


def code_span(value: object) -> str:
    """``value`` as one code span: line breaks as spaces, invisible characters as ``\\uXXXX``,
    fenced with a backtick run one longer than the longest run inside, one space of padding on
    each side (so a leading or trailing backtick stays text)."""
    text = _BREAKS.sub(" ", str(value))
    text = text.translate(escape_table(text, _span_char))
    longest = max((len(run) for run in _TICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}"


def joined(parts: list[str]) -> str:
    """``parts`` end to end, with a space where one ends in a backtick and the next starts
    with one: two fences that touch would read as one longer run and open a different span."""
    out = ""
    for part in parts:
        out += " " + part if out.endswith("`") and part.startswith("`") else part
    return out


def code_pieces(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (is code, piece) as CommonMark reads code spans: a run of n backticks
    opens one that the next run of exactly n closes (one space of padding on each side is
    dropped when both are there); a run with no closer is text."""
    runs = list(_TICKS.finditer(text))
    pieces: list[tuple[bool, str]] = []
    last = index = 0
    while index < len(runs):
        opener = runs[index]
        width = len(opener.group())
        close = next(
            (j for j in range(index + 1, len(runs)) if len(runs[j].group()) == width), None
        )
        if close is None:
            index += 1
            continue
        if opener.start() > last:
            pieces.append((False, text[last : opener.start()]))
        inside = text[opener.end() : runs[close].start()]
        if len(inside) > 2 and inside[0] == inside[-1] == " " and inside.strip(" "):
            inside = inside[1:-1]
        pieces.append((True, inside))
        last, index = runs[close].end(), close + 1
    if last < len(text) or not pieces:
        pieces.append((False, text[last:]))
    return pieces


def is_skill_name(text: str) -> bool:
    """Whether ``text`` follows the skill-name rules (lowercase letters, digits, hyphens)."""
    return len(text) <= MAX_NAME_CHARS and SKILL_NAME.fullmatch(text) is not None


@contextlib.contextmanager
def fork_safe(names: Iterable[str]) -> Iterator[None]:
    """Render in the comment's form while inside: ``names`` are the skill names found in the
    checked-out base repository (any not following the name rules is ignored)."""
    token = _NAMES.set(frozenset(n for n in names if is_skill_name(n)))
    try:
        yield
    finally:
        _NAMES.reset(token)


def md_text(value: object) -> str:
    """A string from a report, for Markdown: escaped prose, or under :func:`fork_safe` a base
    skill name as it is and anything else as a code span."""
    names = _NAMES.get()
    if names is None:
        return escape_md(str(value))
    text = str(value)
    if text in names:
        return text
    # Everything in a code span; a message's own code spans become spans of their own, so its
    # backticks are not shown.
    pieces = code_pieces(_BREAKS.sub(" ", text))
    return joined([code_span(piece) for _, piece in pieces if piece])


def md_number(value: object) -> str:
    """A count or figure from a report: an integer as digits, anything else as report text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return md_text(value)


# Characters with a Markdown/GFM/HTML meaning anywhere in a line: backslash first so the
# escapes added for the others are not escaped again. `&` stops entity references, `$` GitHub
# math, `~` strikethrough, `|` table cells, `<`/`>` raw HTML and autolinks.
_INLINE = frozenset("\\`*_{}[]()<>#|~&$!")
# An ordered-list marker at the start ("1." / "1)") would turn the text into a list.
_LIST_NUMBER = re.compile(r"^( *\d{1,9})([.)])")
# A block marker (list item, thematic break, setext underline) after any leading spaces.
_BLOCK_MARK = re.compile(r"^( *)([-+=])")


# What GitHub links even when every Markdown character is escaped (its autolink extension):
# a scheme URL ("https://…", "ftp://…"), a "www." host, "mailto:"/"xmpp:" and an e-mail address.
# Each becomes one code span, where nothing is linked.
_AUTOLINK = re.compile(
    r"(?i)(?:[a-z][a-z0-9+.-]*://|\bwww\.|\b(?:mailto|xmpp):)[^\s`]*"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
)


def escape_md(text: str) -> str:
    """Escape a user-controlled string for Markdown tables and prose (|, `, <, >, *, _, [, ], …):
    the one escaper of every Markdown output (summary.md, the job summary, --markdown).

    Line breaks become spaces, invisible characters are shown as ``\\uXXXX`` (the shared
    rule), other control characters are dropped, every character with an inline meaning is
    backslash-escaped, a leading block marker (``-``, ``+``, ``=``, ``1.``) is escaped, and
    ``@`` is written as a code span so a case id cannot @-mention anyone (GitHub links no
    mention inside code). A bare URL, a ``www.`` host or an e-mail address becomes a code span
    too, so none is linked. The text's own code spans (``like this``) stay code spans, fenced
    longer than any backtick run inside them, and a backtick with no partner is a code span
    of its own: no backtick is ever shown escaped. The result renders as the original text on
    GitHub."""
    text = _BREAKS.sub(" ", str(text))
    escaped = joined(
        [code_span(piece) if code else _linkless(piece) for code, piece in code_pieces(text)]
    )
    escaped = _BLOCK_MARK.sub(r"\1\\\2", escaped)
    return _LIST_NUMBER.sub(r"\1\\\2", escaped)


def _linkless(text: str) -> str:
    """Prose with each autolinkable part and each lone backtick run as a code span."""
    parts: list[str] = []
    last = 0
    for found in _AUTOLINK.finditer(text):
        link = _trimmed(found.group())
        parts += [_prose(text[last : found.start()]), code_span(link)]
        last = found.start() + len(link)
    return joined([*parts, _prose(text[last:])])


def _trimmed(link: str) -> str:
    """``link`` without the trailing punctuation GitHub leaves out of a link (an unbalanced
    ``)`` included): it stays prose, escaped as such."""
    while link and (
        link[-1] in ".,;:!?'\"*_~" or (link[-1] == ")" and link.count(")") > link.count("("))
    ):
        link = link[:-1]
    return link


def _prose(text: str) -> str:
    # A backtick run with no closer is shown in a code span of its own, never as \`.
    parts = _TICKS.split(text)
    runs = _TICKS.findall(text)
    out = [parts[0].translate(escape_table(parts[0], _md_char))]
    for run, rest in zip(runs, parts[1:], strict=True):
        out += [code_span(run), rest.translate(escape_table(rest, _md_char))]
    return joined(out)


def _md_char(char: str) -> str | None:
    """The Markdown form of one visible character (None: as it is)."""
    if char in _INLINE:
        return "\\" + char
    if char == "@":
        return "`@`"
    if char == "\t":
        return " "
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF:
        return ""  # other controls (C0, DEL, C1) and lone surrogates carry no text
    return None

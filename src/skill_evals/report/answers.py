"""The answer texts of the HTML report's per-case detail (``--include-outputs``, off by
default): the one place where agent outputs may appear, because the user asked for them to
see why a task failed. Never used by the JSON, JUnit or Markdown renderers.

Bounded: each answer is cut at ``ANSWER_CHARS`` characters and one page holds at most
``PAGE_CHARS`` characters of answers; every character is HTML-escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from ..escaping.invisible import show_invisible

# (case id, trial, variant) → the observation's output
Answers = Mapping[tuple[str, int, str], str]

ANSWER_CHARS = 4000
PAGE_CHARS = 2_000_000


class AnswerBudget:
    """How many characters of answers one page may still take."""

    def __init__(self, total: int = PAGE_CHARS) -> None:
        self.left = total
        self.cut_short = False  # some answers were left out because the page was full

    def take(self, text: str) -> str | None:
        """``text`` cut to what fits (None when nothing fits any more)."""
        if self.left <= 0:
            self.cut_short = True
            return None
        piece = text[: min(ANSWER_CHARS, self.left)]
        self.left -= len(piece)
        return piece


def _e(value: object) -> str:
    return escape(show_invisible(value), quote=True)


def case_answers(
    case_id: str, trials: Sequence[object], answers: Answers, budget: AnswerBudget
) -> str:
    """A folded block with the case's answers per trial and variant ("" when none ran)."""
    items = []
    for trial in range(1, len(trials) + 1):
        for variant in ("with", "without"):
            text = answers.get((case_id, trial, variant))
            if text is None:
                continue
            piece = budget.take(text)
            if piece is None:
                items.append(f"<p class='muted'>trial {trial} {variant}: left out (page full)</p>")
                continue
            more = (
                f" <span class='muted'>(first {len(piece):,} of {len(text):,} characters)</span>"
                if len(piece) < len(text)
                else ""
            )
            items.append(
                f"<p><strong>trial {trial} {variant}</strong>{more}</p><pre>{_e(piece)}</pre>"
            )
    if not items:
        return ""
    return f"<details><summary>answers</summary>{''.join(items)}</details>"

"""Report messages with a severity: ``error`` (why the run did not pass), ``warning`` (worth
fixing, the exit code does not depend on it) and ``note`` (for information).

The report keeps ``messages`` as plain strings (the schema of version 1) and adds the parallel
list ``messageSeverities``; :func:`severities_of` reads both, and gives reports written before
that list a sensible default.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Severity = Literal["error", "warning", "note"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "note")


class Warned(Protocol):
    """What :func:`runner_warnings` reads of an observation: its runner line's warnings."""

    @property
    def warnings(self) -> Sequence[str]: ...


class Failed(Protocol):
    """What :func:`failures_message` reads of a runner failure."""

    @property
    def case_id(self) -> str: ...
    @property
    def trial(self) -> int: ...
    @property
    def variant(self) -> str: ...
    @property
    def reason(self) -> str: ...


# Every output of a run with the simulated runner carries this note: its figures measure the
# overlap of words, which a reader could otherwise take for a model's routing. Here, below both
# the runner (agents/simulated.py) and the renderers, so each can name it.
ARTEFACTS = (
    "simulated runner: figures are artefacts of word matching between the prompts and the "
    "description, not a model's behaviour"
)


@dataclass
class Messages:
    """Messages in the order they were added, each with its severity.

    ``append`` adds an error: most messages the scoring step writes explain a failed or void
    run, and a message added without thought must never be hidden as a note."""

    items: list[tuple[Severity, str]] = field(default_factory=list)

    def append(self, text: str) -> None:
        """Add an error (the run did not pass because of it)."""
        self.items.append(("error", text))

    def error(self, text: str) -> None:
        """Add an error (the run did not pass because of it)."""
        self.items.append(("error", text))

    def warning(self, text: str) -> None:
        """Add a warning (worth fixing; the exit code does not depend on it)."""
        self.items.append(("warning", text))

    def note(self, text: str) -> None:
        """Add a note (for information)."""
        self.items.append(("note", text))

    def texts(self) -> list[str]:
        """The report's ``messages``."""
        return [text for _, text in self.items]

    def severities(self) -> list[Severity]:
        """The report's ``messageSeverities``, parallel to ``messages``."""
        return [severity for severity, _ in self.items]

    def __iter__(self) -> Iterator[tuple[Severity, str]]:
        return iter(self.items)


_BLANKS = re.compile(r"[^\S\u2028\u2029]+")


def runner_warnings(observations: Iterable[Warned]) -> list[str]:
    """The distinct ``warnings`` of the runner lines, in first-seen order, each as one safe line
    ``runner: <text>``: blanks collapsed, control and invisible characters written ``\\uXXXX``
    (terminal-escaped, so every output shows them the same way)."""
    from .escaping.terminal import terminal_safe

    seen: dict[str, None] = {}
    for observation in observations:
        for text in observation.warnings:
            # Blanks collapse, but U+2028/U+2029 (which split() counts as blanks) are shown.
            flat = _BLANKS.sub(" ", text).strip(" ") or "(empty warning)"
            seen.setdefault(f"runner: {terminal_safe(flat)}", None)
    return list(seen)


def stderr_warnings(report: Mapping[str, Any]) -> list[str]:
    """The report's warnings that are also printed on stderr (``skill-evals: warning: …``):
    what a runner warned about, skills no content can prove loaded, and an agent CLI that is
    not a tested release."""
    return [
        m
        for m in by_severity(report, "warning")
        if m.startswith("runner: ") or NOT_UNIQUE in m or UNTESTED_VERSION in m
    ]


NOT_UNIQUE = " characters are unique to it (shared with "
# In the line of an agent CLI that is not a tested release (agents/versions.py).
UNTESTED_VERSION = ", results may differ; install it: "


def severities_of(report: Mapping[str, Any]) -> list[tuple[Severity, str]]:
    """(severity, text) for each of ``report["messages"]``.

    Without a valid ``messageSeverities`` (a report from an older version, or one edited by
    hand) every message of a report that did not pass is an error and every message of a
    passing one a note: nothing that explains a failure is ever shown as a mere note."""
    texts = [str(m) for m in report.get("messages") or []]
    given = report.get("messageSeverities")
    if isinstance(given, list) and len(given) == len(texts) and all(s in SEVERITIES for s in given):
        return list(zip(given, texts, strict=True))
    default: Severity = "note" if report.get("exitCode") == 0 else "error"
    return [(default, text) for text in texts]


def by_severity(report: Mapping[str, Any], severity: Severity) -> list[str]:
    """The texts of the report's messages of one severity, in order."""
    return [text for level, text in severities_of(report) if level == severity]


def failures_message(failures: Sequence[Failed], variants: bool = True) -> str:
    """One line a person can act on: how many failed, and the most frequent reason (the
    runner's own words when it gave one) with the first invocation it hit (its variant too
    unless ``variants`` is off: a routing run has only one)."""
    counts: dict[str, int] = {}
    firsts: dict[str, Failed] = {}
    for failure in failures:
        counts[failure.reason] = counts.get(failure.reason, 0) + 1
        firsts.setdefault(failure.reason, failure)
    reason = max(counts, key=lambda r: counts[r])  # ties: the earliest (dicts keep order)
    first = firsts[reason]
    where = f"{first.case_id} trial {first.trial}" + (f" {first.variant}" if variants else "")
    if len(counts) == 1:
        head = f"{len(failures)} runner failure(s), all: {reason} (first: {where})"
    else:
        head = (
            f"{len(failures)} runner failure(s) with {len(counts)} different reasons, most "
            f"often ({counts[reason]}×): {reason} (first: {where})"
        )
    return head + "; the evidence is void (every failure is in runner.failures)"


def join_clauses(*parts: str | None) -> str:
    """One reason from several, each clause once: ``parts`` are split at ``"; "``, and a
    clause equal to another, or the start of a longer one (``new since base X`` beside ``new
    since base X: no baseline``), is dropped, so no builder can say the same thing twice."""
    clauses: list[str] = []
    for part in parts:
        for clause in (part or "").split("; "):
            clause = clause.strip()
            if clause and clause not in clauses:
                clauses.append(clause)
    kept = [
        c
        for c in clauses
        if not any(o != c and (o.startswith(c + ":") or o.startswith(c + " (")) for o in clauses)
    ]
    return "; ".join(kept)

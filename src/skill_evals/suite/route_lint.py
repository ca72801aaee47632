"""`route --lint`: what can be said about a catalog and its routing cases without running
anything (docs/routing.md).

- **Overlapping descriptions**: pairs of catalog skills whose descriptions share most of their
  words — the Jaccard index of the two sets of lowercased words (runs of letters and digits),
  listed when it is at least 0.5, largest first. Such pairs are the likeliest collisions.
- **Unexpected skills**: catalog skills that no case lists in ``expect``, so nothing measures
  whether the agent finds them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from .. import __version__
from ..escaping.terminal import terminal_safe
from .catalog import Catalog
from .route_cases import load_route_cases

OVERLAP_THRESHOLD = Fraction(1, 2)
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Overlap:
    """Two catalog skills whose descriptions overlap; ``a`` comes first in catalog order."""

    a: str
    b: str
    jaccard: float
    shared: int  # words in both descriptions
    union: int  # words in either


@dataclass(frozen=True)
class LintResult:
    """What --lint found."""

    catalog: tuple[str, ...]
    cases_path: str
    overlaps: tuple[Overlap, ...]
    unexpected: tuple[str, ...]

    @property
    def findings(self) -> int:
        """How many problems were found (the exit code is 1 when there is any)."""
        return len(self.overlaps) + len(self.unexpected)


def description_words(description: str) -> frozenset[str]:
    """The set of lowercased words of a description."""
    return frozenset(_WORD.findall(description.lower()))


def overlaps(catalog: Catalog) -> list[Overlap]:
    """Pairs with a description Jaccard index ≥ 0.5, largest first (ties in catalog order)."""
    words = [description_words(s.description) for s in catalog.skills]
    found: list[tuple[Fraction, int, int, Overlap]] = []
    for i, first in enumerate(catalog.skills):
        for j in range(i + 1, len(catalog.skills)):
            union = len(words[i] | words[j])
            if not union:
                continue  # two empty descriptions: nothing to compare (validate reports them)
            shared = len(words[i] & words[j])
            index = Fraction(shared, union)
            if index >= OVERLAP_THRESHOLD:
                second = catalog.skills[j]
                overlap = Overlap(first.name, second.name, float(index), shared, union)
                found.append((index, i, j, overlap))
    found.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [item[3] for item in found]


def lint_catalog(catalog: Catalog, cases: Path) -> LintResult:
    """Lint ``catalog`` with the routing cases in ``cases`` (loaded with every file rule: an
    invalid case file is exit 5 here as in a run)."""
    suite = load_route_cases(cases, catalog.names)
    expected = {name for case in suite.cases for name in case.expect}
    return LintResult(
        catalog=catalog.names,
        cases_path=str(suite.path),
        overlaps=tuple(overlaps(catalog)),
        unexpected=tuple(n for n in catalog.names if n not in expected),
    )


def lint_json(result: LintResult) -> dict[str, Any]:
    """The lint result as a JSON-ready document."""
    return {
        "schemaVersion": 1,
        "tool": {"name": "skill-evals", "version": __version__},
        "catalog": list(result.catalog),
        "cases": result.cases_path,
        "overlaps": [
            {"a": o.a, "b": o.b, "jaccard": o.jaccard, "shared": o.shared, "union": o.union}
            for o in result.overlaps
        ],
        "unexpected": list(result.unexpected),
        "findings": result.findings,
    }


def render_lint_json(result: LintResult) -> str:
    """``--lint --format json``."""
    return json.dumps(lint_json(result), indent=2, ensure_ascii=False) + "\n"


def render_lint_text(result: LintResult) -> str:
    """``--lint`` for a person."""
    e = terminal_safe
    lines = [
        f"route --lint: {len(result.catalog)} skill(s), {result.findings} finding(s) "
        f"(no runner was started)",
        "",
    ]
    if result.overlaps:
        lines.append(
            "Overlapping descriptions (Jaccard of their word sets ≥ 0.5; likely collisions)"
        )
        for o in result.overlaps:
            lines.append(
                f"  - {e(o.a)} ↔ {e(o.b)}: {o.jaccard:.2f} ({o.shared} of {o.union} words shared)"
                " — make each description say what the other does not"
            )
        lines.append("")
    else:
        lines += ["Overlapping descriptions: none (no pair reaches Jaccard 0.5)", ""]
    if result.unexpected:
        lines.append(f"Skills no case in {e(result.cases_path)} expects (nothing measures them)")
        lines += [f"  - {e(name)} — add cases whose expect lists it" for name in result.unexpected]
        lines.append("")
    else:
        lines += ["Every catalog skill is expected by at least one case.", ""]
    return "\n".join(lines) + "\n"

"""Routing metrics over the observations of a run (docs/routing.md).

Per observation: L = invokedSkills ∩ catalog, E = the case's ``expect``; loaded names outside
the catalog are counted in ``other_loads``. Accuracy is the share of observations with L = E.
Per skill s: TP (s ∈ E ∩ L), FP (s ∈ L ∖ E), FN (s ∈ E ∖ L), with precision, recall and F1
undefined (None) on a zero denominator. Micro F1 sums TP/FP/FN over the skills; macro F1 is
the mean F1 of the skills whose F1 is defined. Confusion cells (rows expected, columns loaded):
for each e ∈ E — (e, e) when e ∈ L, (e, w) for every w ∈ L ∖ E, (e, none) when e ∉ L and
L ∖ E = ∅; when E = ∅ — (none, w) for every w ∈ L, or (none, none) when L = ∅.

Every figure is computed from integer counts as an exact fraction and rounded once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from ..run.observations import Observation
from ..suite.catalog import NONE_LABEL
from ..suite.route_cases import RouteCase
from .stats import exact_f1


@dataclass(frozen=True)
class SkillScore:
    """One catalog skill's counts and scores."""

    name: str
    tp: int
    fp: int
    fn: int
    precision: float | None
    recall: float | None
    f1: float | None
    expected_by: int  # how many cases list the skill in expect (the F1 gate covers these)


@dataclass(frozen=True)
class Collision:
    """Two catalog skills confused with each other: cell(a, b) + cell(b, a) observations, on
    these cases (case-file order). ``a`` comes first in catalog order."""

    a: str
    b: str
    count: int
    case_ids: tuple[str, ...]


@dataclass
class RouteMetrics:
    """Everything the report shows about routing."""

    observed: int = 0
    correct: int = 0
    accuracy: float | None = None
    other_loads: int = 0
    micro_f1: float | None = None
    macro_f1: float | None = None
    skills: list[SkillScore] = field(default_factory=list)
    labels: tuple[str, ...] = ()
    counts: list[list[int]] = field(default_factory=list)
    collisions: list[Collision] = field(default_factory=list)
    # case id → per trial: the catalog skills loaded (catalog order) / L = E; None: not observed
    loaded: dict[str, list[list[str] | None]] = field(default_factory=dict)
    right: dict[str, list[bool | None]] = field(default_factory=dict)


def _float(value: Fraction | None) -> float | None:
    return None if value is None else float(value)


@dataclass
class _Tally:
    """Counts by catalog index (the last label, ``none``, is len(names)) as observations are
    read: TP, FP, FN, how many cases expect each skill, the confusion cells and, per pair of
    confused skills, the cases it happened on."""

    size: int
    tp: list[int] = field(init=False)
    fp: list[int] = field(init=False)
    fn: list[int] = field(init=False)
    expected_by: list[int] = field(init=False)
    counts: list[list[int]] = field(init=False)
    pair_cases: dict[tuple[int, int], list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tp, self.fp, self.fn = [0] * self.size, [0] * self.size, [0] * self.size
        self.expected_by = [0] * self.size
        self.counts = [[0] * (self.size + 1) for _ in range(self.size + 1)]

    def add(self, case_id: str, expect: set[int], loaded: set[int]) -> None:
        """One observation of a case: E = ``expect``, L = ``loaded``."""
        extra = loaded - expect
        for s in loaded & expect:
            self.tp[s] += 1
        for s in extra:
            self.fp[s] += 1
        for s in expect - loaded:
            self.fn[s] += 1
        none, counts = self.size, self.counts
        if not expect:
            for w in extra:
                counts[none][w] += 1
            if not loaded:
                counts[none][none] += 1
            return
        for e in expect:
            if e in loaded:
                counts[e][e] += 1
            for w in extra:
                counts[e][w] += 1
                ids = self.pair_cases.setdefault((min(e, w), max(e, w)), [])
                if not ids or ids[-1] != case_id:
                    ids.append(case_id)
            if e not in loaded and not extra:
                counts[e][none] += 1


def route_metrics(
    cases: Sequence[RouteCase],
    names: Sequence[str],
    rows: Mapping[str, Sequence[Observation | None]],
) -> RouteMetrics:
    """Score ``rows`` (case id → the observation of each trial, None where missing)."""
    index = {name: i for i, name in enumerate(names)}
    tally = _Tally(len(names))
    result = RouteMetrics(labels=(*names, NONE_LABEL), counts=tally.counts)
    for case in cases:
        expect = {index[e] for e in case.expect}
        for e in expect:
            tally.expected_by[e] += 1
        loaded_row: list[list[str] | None] = []
        right_row: list[bool | None] = []
        for obs in rows.get(case.id, ()):
            if obs is None:
                loaded_row.append(None)
                right_row.append(None)
                continue
            invoked = set(obs.invoked_skills)
            loaded = {index[n] for n in invoked if n in index}
            result.other_loads += sum(1 for n in invoked if n not in index)
            result.observed += 1
            is_right = loaded == expect
            result.correct += is_right
            loaded_row.append([names[i] for i in sorted(loaded)])
            right_row.append(is_right)
            tally.add(case.id, expect, loaded)
        result.loaded[case.id] = loaded_row
        result.right[case.id] = right_row
    if result.observed:
        result.accuracy = float(Fraction(result.correct, result.observed))
    _f1_figures(result, names, tally)
    result.collisions = _collisions(names, index, tally)
    return result


def _f1_figures(result: RouteMetrics, names: Sequence[str], tally: _Tally) -> None:
    """Each skill's scores, micro and macro F1."""
    f1s: list[Fraction] = []
    tp, fp, fn = tally.tp, tally.fp, tally.fn
    for i, name in enumerate(names):
        p, r, f1 = exact_f1(tp[i], fp[i], fn[i])
        if f1 is not None:
            f1s.append(f1)
        result.skills.append(
            SkillScore(
                name, tp[i], fp[i], fn[i], _float(p), _float(r), _float(f1), tally.expected_by[i]
            )
        )
    result.micro_f1 = _float(exact_f1(sum(tp), sum(fp), sum(fn))[2])
    result.macro_f1 = float(sum(f1s, Fraction(0)) / len(f1s)) if f1s else None


def _collisions(names: Sequence[str], index: Mapping[str, int], tally: _Tally) -> list[Collision]:
    """Pairs of skills confused with each other: largest first; ties in catalog order of a,
    then b."""
    counts = tally.counts
    collisions = [
        Collision(names[a], names[b], counts[a][b] + counts[b][a], tuple(ids))
        for (a, b), ids in tally.pair_cases.items()
    ]
    collisions.sort(key=lambda c: (-c.count, index[c.a], index[c.b]))
    return collisions

"""Routing metrics against values computed by hand: multi-expect cases, [] cases, loads
outside the catalog, undefined F1, the confusion-matrix rules and ranked collisions."""

from __future__ import annotations

from fractions import Fraction

from skill_evals.run.observations import Observation
from skill_evals.score.routing import route_metrics
from skill_evals.suite.route_cases import RouteCase

# case id → (expect, invokedSkills of its one trial)
SCENARIO: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "c1": (("a",), ("a",)),  # right
    "c2": (("a",), ("b",)),  # a lost to b
    "c3": (("a", "b"), ("b", "a")),  # a correct two-skill load: diagonal only
    "c4": (("a", "b"), ("a",)),  # b missed, nothing else loaded: (b, none)
    "c5": (("a", "b"), ("a", "c")),  # b missed while c loaded: (a, c) and (b, c), no (b, none)
    "c6": ((), ()),  # right: (none, none)
    "c7": ((), ("c", "zzz")),  # c loaded where none should; zzz is outside the catalog
    "c8": (("c",), ("other",)),  # L = ∅ (other is not in the catalog): (c, none)
    "c9": (("b",), ("b", "a")),  # b right but a loaded too: (b, b) and (b, a)
}
NAMES = ("a", "b", "c", "d")  # d: never expected, never loaded


def _cases() -> list[RouteCase]:
    return [
        RouteCase(id=cid, prompt=cid, expect=expect, line=i + 1, unit=i)
        for i, (cid, (expect, _)) in enumerate(SCENARIO.items())
    ]


def _rows() -> dict[str, list[Observation | None]]:
    return {
        cid: [Observation(cid, 1, "with", loaded, "", 0)] for cid, (_, loaded) in SCENARIO.items()
    }


def test_accuracy_and_other_loads() -> None:
    metrics = route_metrics(_cases(), NAMES, _rows())
    assert metrics.observed == 9 and metrics.correct == 3
    assert metrics.accuracy == float(Fraction(1, 3))
    assert metrics.other_loads == 2  # zzz in c7, other in c8


def test_per_skill_counts_and_null_rules() -> None:
    metrics = route_metrics(_cases(), NAMES, _rows())
    by = {s.name: s for s in metrics.skills}
    assert (by["a"].tp, by["a"].fp, by["a"].fn) == (4, 1, 1)
    assert by["a"].precision == 0.8 and by["a"].recall == 0.8 and by["a"].f1 == 0.8
    assert (by["b"].tp, by["b"].fp, by["b"].fn) == (2, 1, 2)
    assert by["b"].precision == float(Fraction(2, 3)) and by["b"].recall == 0.5
    assert by["b"].f1 == float(Fraction(4, 7))
    # c: loaded twice where not expected, missed once, never right: P = R = 0, so F1 = 0
    assert (by["c"].tp, by["c"].fp, by["c"].fn) == (0, 2, 1)
    assert by["c"].precision == 0.0 and by["c"].recall == 0.0 and by["c"].f1 == 0.0
    # d: no denominator at all: everything undefined, never 0
    assert (by["d"].tp, by["d"].fp, by["d"].fn) == (0, 0, 0)
    assert by["d"].precision is None and by["d"].recall is None and by["d"].f1 is None
    assert [by[n].expected_by for n in NAMES] == [5, 4, 1, 0]  # c1-c5; c3-c5 c9; c8


def test_micro_and_macro_f1() -> None:
    metrics = route_metrics(_cases(), NAMES, _rows())
    assert metrics.micro_f1 == 0.6  # TP 6, FP 4, FN 4
    # macro over the skills with a defined F1 (a, b, c; not d)
    assert metrics.macro_f1 == float((Fraction(4, 5) + Fraction(4, 7) + 0) / 3)


def test_confusion_matrix_rules() -> None:
    metrics = route_metrics(_cases(), NAMES, _rows())
    assert metrics.labels == ("a", "b", "c", "d", "none")
    assert metrics.counts == [
        # a  b  c  d  none
        [4, 1, 1, 0, 0],  # expected a: c1 c3 c4 c5 diagonal; c2 → b; c5 → c
        [1, 2, 1, 0, 1],  # expected b: c9 → a; c3 c9 diagonal; c5 → c; c4 → none
        [0, 0, 0, 0, 1],  # expected c: c8 loaded nothing of the catalog
        [0, 0, 0, 0, 0],
        [0, 0, 1, 0, 1],  # expected none: c7 → c; c6 none
    ]


def test_collisions_ranked_with_their_cases() -> None:
    metrics = route_metrics(_cases(), NAMES, _rows())
    got = [(c.a, c.b, c.count, c.case_ids) for c in metrics.collisions]
    assert got == [("a", "b", 2, ("c2", "c9")), ("a", "c", 1, ("c5",)), ("b", "c", 1, ("c5",))]


def test_missing_trials_are_not_scored() -> None:
    cases = _cases()[:2]
    rows: dict[str, list[Observation | None]] = {
        "c1": [Observation("c1", 1, "with", ("a",), "", 0), None],
        "c2": [None, None],
    }
    metrics = route_metrics(cases, ("a", "b"), rows)
    assert metrics.observed == 1 and metrics.accuracy == 1.0
    assert metrics.loaded == {"c1": [["a"], None], "c2": [None, None]}
    assert metrics.right == {"c1": [True, None], "c2": [None, None]}
    # b: expected by no case and never loaded → undefined; a: recall 1, precision 1
    assert [s.f1 for s in metrics.skills] == [1.0, None]


def test_nothing_observed_is_undefined_not_zero() -> None:
    metrics = route_metrics(_cases()[:1], ("a",), {"c1": [None]})
    assert metrics.accuracy is None and metrics.micro_f1 is None and metrics.macro_f1 is None
    assert metrics.collisions == []

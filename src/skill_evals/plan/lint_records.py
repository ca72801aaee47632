"""The lint rules that read recorded runs (`skill-evals lint --observations FILE`): task cases
that never discriminate, and an uplift gate no skill could pass against the recorded baseline."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ..run.gc_pause import gc_thaw
from ..run.records import load_observations
from ..run.regex import RegexPool
from ..score.scoring import build_grid, judge_tasks
from ..score.stats import bootstrap_interval
from ..score.task_results import CaseTask
from ..suite.cases import CaseSuite
from .lint import LintProblem


def record_problems(
    suite: CaseSuite,
    skill_name: str,
    observations: Path,
    trials: int,
    *,
    min_uplift: float | None,
    seed: int,
    bootstrap_samples: int,
) -> list[LintProblem]:
    """``non-discriminating`` and ``uplift-gate-impossible`` from the recorded ``with`` and
    ``without`` observations (read with the rules of ``test --observations``)."""
    recorded, _ = load_observations(observations, suite, trials, skill_name)
    grid = build_grid(suite, trials, recorded)
    with RegexPool() as matcher:
        tasks = judge_tasks(suite, grid, matcher)
    problems = []
    for case in suite.cases:
        task = tasks.get(case.id)
        if case.task is None or task is None:
            continue
        values = {v for variant in task.passes.values() for v in variant if v is not None}
        if len(values) == 1:
            outcome = "passes" if values == {True} else "fails"
            problems.append(
                LintProblem(
                    "non-discriminating",
                    "warning",
                    (case.id,),
                    (case.line,),
                    f"case {case.id}: its task {outcome} in every arm and trial recorded, with "
                    "the skill and without it: it cannot show an uplift",
                )
            )
    if min_uplift is not None:
        problems += _impossible_gate(suite, tasks, min_uplift, seed, bootstrap_samples)
    gc_thaw()  # the loader froze the observations (run/gc_pause.py)
    return problems


def _impossible_gate(
    suite: CaseSuite,
    tasks: dict[str, CaseTask],
    min_uplift: float,
    seed: int,
    samples: int,
) -> list[LintProblem]:
    """The uplift interval's lower bound if every ``with`` run passed, against the recorded
    ``without`` runs; below the gate, no skill can pass it on this suite."""
    without: dict[int, list[bool]] = {}
    for case in suite.cases:
        task = tasks.get(case.id)
        if case.task is None or task is None:
            continue
        passes = task.passes.get("without", [])
        without.setdefault(case.unit, []).extend(p for p in passes if p is not None)
    differences = [1 - Fraction(sum(values), len(values)) for values in without.values() if values]
    if not differences:
        return []
    lower = float(bootstrap_interval(differences, samples, seed).lower)
    if lower >= min_uplift:
        return []
    return [
        LintProblem(
            "uplift-gate-impossible",
            "warning",
            (),
            (),
            f"even if every run with the skill passed, the uplift's lower bound would be "
            f"{lower:.3f}, below --min-uplift {min_uplift:g}, against the recorded runs without it",
        )
    ]

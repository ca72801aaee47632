"""Observations → the report's measured sections (docs/statistics.md, docs/report.md): the
observation grid, trigger metrics, task pass rates and uplift, loading violations and evidence
states, meta sums and per-case results. Pure functions of the observations; the verdict and the
exit code are decided in report/test_report.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..run.observations import (
    ARMS,
    META_KEYS,
    VARIANTS,
    Observation,
    RunnerFailure,
    reported_sum,
)
from ..run.regex import RegexPool
from ..suite.cases import MIN_UNITS, Case, CaseSuite
from .stats import SignTest, bootstrap_interval, sign_test, trigger_metrics
from .task_results import CaseTask, efficiency_section, judge_case

# Every interval of the report: a 95% percentile bootstrap.
INTERVAL_LEVEL = 0.95
INTERVAL_METHOD = "percentile-bootstrap"


def task_unit_count(suite: CaseSuite) -> int:
    """Independent units (docs/cases.md) among the cases that have a task check."""
    return len({c.unit for c in suite.cases if c.task is not None})


# case id → 2 × trials slots: slot 2 × (trial - 1) is the trial's "with" observation, the next
# one its "without" observation; None where it is missing. row[0::2] / row[1::2] are the
# variants' rows in trial order.
Grid = dict[str, list[Observation | None]]


def build_grid(suite: CaseSuite, trials: int, observations: Iterable[Observation]) -> Grid:
    """Place each observation in its slot, in one pass (docs/performance.md): every section reads
    these rows instead of looking up a (case, trial, variant) key per observation."""
    grid: Grid = {c.id: [None] * (2 * trials) for c in suite.cases}
    for obs in observations:
        # Observations outside the plan (unknown case, trial out of range) were rejected when
        # they were read; ignoring any that slip through keeps the counts honest. The first
        # observation of a key wins.
        row = grid.get(obs.case_id)
        trial = obs.trial
        if row is None or not 1 <= trial <= trials:
            continue
        if obs.variant == "with":
            index = 2 * trial - 2
        elif obs.variant == "without":
            index = 2 * trial - 1
        else:
            continue
        if row[index] is None:
            row[index] = obs
    return grid


def trigger_section(
    suite: CaseSuite, skill_name: str, grid: Grid
) -> tuple[dict[str, Any], dict[str, list[bool | None]]]:
    tp = fp = fn = tn = 0
    missed: list[str] = []
    false_triggers: list[str] = []
    per_case: dict[str, list[bool | None]] = {}
    for case in suite.cases:
        row: list[bool | None] = [
            None if obs is None else skill_name in obs.invoked_skills for obs in grid[case.id][0::2]
        ]
        per_case[case.id] = row
        hits, misses = row.count(True), row.count(False)
        if case.expect_trigger:
            tp += hits
            fn += misses
            if misses:
                missed.append(case.id)
        else:
            fp += hits
            tn += misses
            if hits:
                false_triggers.append(case.id)
    metrics = trigger_metrics(tp, fp, fn)
    section = {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": metrics.precision,
        "recall": metrics.recall,
        "f1": metrics.f1,
        "falseTriggerCaseIds": false_triggers,
        "missedTriggerCaseIds": missed,
    }
    return section, per_case


def judge_tasks(suite: CaseSuite, grid: Grid, matcher: RegexPool) -> dict[str, CaseTask]:
    """Case id → its task verdicts, for the cases that have a task."""
    return {
        case.id: judge_case(case, grid[case.id], matcher)
        for case in suite.cases
        if case.task is not None
    }


def _task_counts(
    task_cases: Sequence[Case], task_passes: Mapping[tuple[str, str], Sequence[bool | None]]
) -> tuple[dict[str, list[int]], list[Fraction]]:
    """Variant → [passed, total]; and each unit's paired difference of pass rates (with −
    without), in case-file order of its first case (units are numbered that way), for the
    units observed in both variants."""
    counts: dict[str, list[int]] = {v: [0, 0] for v in VARIANTS}  # variant → [passed, total]
    # unit → variant → [passed, total]; a unit may hold several cases (equal prompts).
    units: dict[int, dict[str, list[int]]] = {}
    for case in task_cases:
        per_unit = units.setdefault(case.unit, {v: [0, 0] for v in VARIANTS})
        for variant in VARIANTS:
            results = task_passes[(case.id, variant)]
            passed = results.count(True)
            total = len(results) - results.count(None)
            counts[variant][0] += passed
            counts[variant][1] += total
            per_unit[variant][0] += passed
            per_unit[variant][1] += total
    differences: list[Fraction] = []
    for unit in sorted(units):
        w, wo = units[unit]["with"], units[unit]["without"]
        if w[1] and wo[1]:
            differences.append(Fraction(w[0], w[1]) - Fraction(wo[0], wo[1]))
    return counts, differences


def task_section(
    suite: CaseSuite,
    samples: int,
    seed: int,
    task_passes: Mapping[tuple[str, str], Sequence[bool | None]],
    grid: Grid,
) -> dict[str, Any] | None:
    """The report's ``task``: pass rates with and without the skill, the paired uplift over
    units with its bootstrap interval (``samples``, ``seed``) and sign test, and efficiency;
    None when no case has a task check."""
    task_cases = [c for c in suite.cases if c.task is not None]
    if not task_cases:
        return None  # never a zero uplift: there is nothing to measure
    counts, differences = _task_counts(task_cases, task_passes)
    difference, interval, signs = paired_uplift(differences, samples, seed)
    return {
        "mode": "absolute",
        "units": len(differences),
        # Decided by the case file (as before the run), not by how many units a void run
        # happened to observe: missing observations are reported as exit 7 / 130 instead.
        "insufficient": task_unit_count(suite) < MIN_UNITS,
        "with": rate_block(*counts["with"]),
        "without": rate_block(*counts["without"]),
        "difference": difference,
        "interval": interval,
        "signTest": signs,
        "efficiency": efficiency_section(suite, grid),
    }


def paired_uplift(
    differences: Sequence[Fraction], samples: int, seed: int
) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    """The mean of the per-unit paired differences (None without any), the report's block of
    its bootstrap interval (``samples``, ``seed``) and of its sign test."""
    if not differences:
        return None, interval_block(None, None, samples, seed), sign_test_block(sign_test([]))
    interval = bootstrap_interval(differences, samples, seed)
    return (
        float(sum(differences, Fraction(0)) / len(differences)),
        interval_block(interval.lower, interval.upper, samples, seed),
        sign_test_block(sign_test(differences)),
    )


def interval_block(
    lower: float | None, upper: float | None, samples: int, seed: int
) -> dict[str, Any]:
    """A bootstrap interval as the report gives it: level, bounds, method, samples, seed."""
    return {
        "level": INTERVAL_LEVEL,
        "lower": lower,
        "upper": upper,
        "method": INTERVAL_METHOD,
        "samples": samples,
        "seed": seed,
    }


def sign_test_block(signs: SignTest) -> dict[str, Any]:
    """An exact sign test as the report gives it: the counts of each sign and the p-value."""
    return {
        "positive": signs.positive,
        "negative": signs.negative,
        "ties": signs.ties,
        "pValue": signs.p_value,
    }


def rate_block(passed: int, total: int) -> dict[str, Any]:
    """A pass rate as the report gives it: passed, total, and the rate (null for no total)."""
    return {
        "passed": passed,
        "total": total,
        "passRate": float(Fraction(passed, total)) if total else None,
    }


def loading_violations(suite: CaseSuite, grid: Grid) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for case in suite.cases:
        if not case.include and not case.exclude:
            continue
        # Slots are in plan order: trial by trial, with before without.
        for index, obs in enumerate(grid[case.id]):
            if obs is None:
                continue
            invoked = set(obs.invoked_skills)
            missing = [name for name in case.include if name not in invoked]
            forbidden = [name for name in case.exclude if name in invoked]
            if missing or forbidden:
                found.append(
                    {
                        "caseId": case.id,
                        "trial": index // 2 + 1,
                        "variant": VARIANTS[index % 2],
                        "missing": missing,
                        "forbidden": forbidden,
                    }
                )
    return found


# The state of a skill in one observation's evidence, strongest first.
_STATE_RANK = ("loaded", "unverified", "failed", "attempted", "offered")


def _load_state(obs: Observation | None, skill: str) -> str | None:
    """The tested skill's strongest evidence state in one observation; None without evidence
    naming it (custom runners need not report evidence)."""
    if obs is None or not obs.evidence:
        return None  # most observations carry no evidence: no set to build
    states = {item.get("state") for item in obs.evidence if item.get("skill") == skill}
    return next((state for state in _STATE_RANK if state in states), None)


def load_states(grid: Grid, case_id: str, skill: str) -> dict[str, list[str | None]]:
    row = grid[case_id]
    return {
        variant: [_load_state(obs, skill) for obs in row[offset::2]]
        for offset, variant in enumerate(VARIANTS)
    }


def attempted_not_loaded(suite: CaseSuite, grid: Grid, skill: str) -> list[str]:
    """Cases, in case-file order, where a ``with`` run tried to load the tested skill and its
    evidence shows no load of it (e.g. a read of a wrong path, a failed tool call)."""
    return [
        case.id
        for case in suite.cases
        if any(_load_state(obs, skill) in ("failed", "attempted") for obs in grid[case.id][0::2])
    ]


ISOLATION_UNVERIFIED = (
    "isolation unverified on {count} of {runs} without runs: a command named the skill's files "
    "and its result could not be matched to its text"
)


def isolation_unverified(
    suite: CaseSuite, grid: Grid, skill: str
) -> tuple[list[dict[str, Any]], int]:
    """The ``without`` observations (case-file order, then trial) whose evidence has an
    ``unverified`` item for the tested skill that did not load it — neither a breach nor a
    clean "not loaded" — as ``{caseId, trial, variant, skill, source}``; and how many
    ``without`` observations there are."""
    found: list[dict[str, Any]] = []
    runs = 0
    for case in suite.cases:
        for obs in grid[case.id][1::2]:
            if obs is None:
                continue
            runs += 1
            if not obs.evidence or skill in obs.invoked_skills:
                continue  # no evidence to doubt; or a load: an isolation breach, reported as such
            item = next(
                (
                    e
                    for e in obs.evidence
                    if e.get("skill") == skill and e.get("state") == "unverified"
                ),
                None,
            )
            if item is not None:
                found.append(
                    {"caseId": case.id, "trial": obs.trial, "variant": "without", "skill": skill,
                     "source": item.get("source", "")}
                )  # fmt: skip
    return found, runs


def meta_sums(observations: Iterable[Observation]) -> dict[str, Any]:
    """Sum each recognised meta key; a key no observation reported is null (not 0)."""
    values: dict[str, list[float]] = {key: [] for key in META_KEYS}
    for obs in observations:
        if not obs.meta:
            continue  # the common case: the runner reported no meta
        for key in META_KEYS:
            value = obs.meta.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values[key].append(value)
    return {key: reported_sum(items) for key, items in values.items()}


def failure_order(suite: CaseSuite) -> Any:
    position = {c.id: i for i, c in enumerate(suite.cases)}
    variant_rank: dict[str, int] = {v: i for i, v in enumerate(ARMS)}

    def key(f: RunnerFailure) -> tuple[int, int, int]:
        return (position.get(f.case_id, len(position)), f.trial, variant_rank.get(f.variant, 3))

    return key


def case_result(case: Case, triggered: list[bool | None], task: CaseTask | None) -> dict[str, Any]:
    # A case without a task check has no pass/fail notion: "with"/"without" are null (not a
    # row of falses). A missing observation is null in its trial's slot.
    result: dict[str, Any] = {
        "id": case.id,
        "line": case.line,
        "unit": case.unit,
        "tags": list(case.tags),
        "expectTrigger": case.expect_trigger,
        "triggered": triggered,
        "with": task.passes["with"] if task is not None else None,
        "without": task.passes["without"] if task is not None else None,
        "checks": task.checks if task is not None else [],
        "failedCheck": task.failed_check if task is not None else None,
    }
    if case.source is not None:
        result["source"] = case.source  # shown in the per-case table, never scored
    return result


def baseline_passes(
    suite: CaseSuite,
    trials: int,
    observations: Sequence[Observation],
    task_passes: Mapping[tuple[str, str], Sequence[bool | None]],
    matcher: RegexPool,
) -> dict[tuple[str, str], Sequence[bool | None]]:
    """(case id, arm) → task pass per trial for with (as scored) and baseline."""
    rows: dict[str, list[Observation | None]] = {
        c.id: [None] * (2 * trials) for c in suite.cases if c.task is not None
    }
    for obs in observations:
        row = rows.get(obs.case_id)
        if obs.variant == "baseline" and row is not None and 1 <= obs.trial <= trials:
            # Judged like a with-run: its slot in a with/without row.
            row[2 * obs.trial - 2] = row[2 * obs.trial - 2] or obs
    out: dict[tuple[str, str], Sequence[bool | None]] = {}
    for case in suite.cases:
        if case.task is None:
            continue
        out[(case.id, "with")] = task_passes[(case.id, "with")]
        out[(case.id, "baseline")] = judge_case(case, rows[case.id], matcher).passes["with"]
    return out


def why_f1_undefined(trigger: Mapping[str, Any], suite: CaseSuite | None = None) -> str:
    """Why F1 is undefined. Cases are asked for only when the suite lacks them: a suite that has
    them but none observed (runner failures, an early stop) needs a complete run instead."""
    if trigger["tp"] + trigger["fn"] == 0:
        if suite is not None and any(case.expect_trigger for case in suite.cases):
            return (
                "no with-run of a case that expects the skill to trigger was observed "
                "(runner failures or an early stop); fix the failures and run again"
            )
        return "no observed case expects the skill to trigger (add cases with expectTrigger: true)"
    return "the skill never triggered in an observed with-run, so precision is undefined"

"""Lint of a suite before money is spent: cases and checks that cannot tell a good skill from a
bad one (`skill-evals lint`, and the pre-flight of `test` and `ci`).

Each rule has an id and a severity; a message names cases by id and line, never by prompt.
The rules here need no records; :mod:`.lint_records` adds the ones that read recorded runs.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..checks.model import Budget, Command, FileMatches, IncludesAll, OutputMatches
from ..checks.parse import compile_flags
from ..errors import InvalidInput
from ..score.power import Mde, minimum_detectable_uplift
from ..suite.cases import Case, CaseSuite

MIN_LABEL_UNITS = 5
MIN_TASK_UNITS = 10
DEFAULT_TIMEOUT_MS = 30_000
_BUDGET_LIMITS = {"max_turns": 1000, "max_tokens": 100_000_000, "max_cost_usd": 1000}
MDE_WARNING = 0.5


@dataclass(frozen=True)
class LintProblem:
    """One finding: its rule id, ``warning`` or ``info``, the cases it is about."""

    rule: str
    severity: str
    case_ids: tuple[str, ...]
    lines: tuple[int, ...]
    message: str

    def to_json(self) -> dict[str, object]:
        """The JSON form (lint's ``problems`` and the reports' ``lint``)."""
        return {
            "rule": self.rule,
            "severity": self.severity,
            "caseIds": list(self.case_ids),
            "lines": list(self.lines),
            "message": self.message,
        }

    def text(self, cases_file: str) -> str:
        """``FILE:LINE: severity: rule: message`` (``FILE: …`` for a rule about the suite)."""
        where = f"{cases_file}:{self.lines[0]}" if self.lines else cases_file
        return f"{where}: {self.severity}: {self.rule}: {self.message}"


@dataclass(frozen=True)
class LintResult:
    """Every problem, in rule order, and the minimum detectable uplift (with a gate)."""

    problems: tuple[LintProblem, ...]
    mde: Mde | None

    @property
    def warnings(self) -> tuple[LintProblem, ...]:
        """The problems that ``--strict`` turns into exit 5."""
        return tuple(p for p in self.problems if p.severity == "warning")


def _problem(
    rule: str, cases: Sequence[Case], message: str, severity: str = "warning"
) -> LintProblem:
    return LintProblem(
        rule, severity, tuple(c.id for c in cases), tuple(c.line for c in cases), message
    )


def _units(suite: CaseSuite) -> list[list[Case]]:
    units: dict[int, list[Case]] = {}
    for case in suite.cases:
        units.setdefault(case.unit, []).append(case)
    return list(units.values())


def _label_problems(units: list[list[Case]]) -> list[LintProblem]:
    problems = []
    for label, rule, word in ((True, "few-positives", "true"), (False, "few-negatives", "false")):
        count = sum(1 for unit in units if unit[0].expect_trigger is label)
        if count < MIN_LABEL_UNITS:
            problems.append(
                _problem(
                    rule,
                    (),
                    f"{count} independent case(s) with expectTrigger {word}; at least "
                    f"{MIN_LABEL_UNITS} make the trigger figures mean something",
                )
            )
    return problems


def _unit_problems(units: list[list[Case]]) -> list[LintProblem]:
    problems = []
    for unit in units:
        if len(unit) < 2:
            continue
        labels = {c.expect_trigger for c in unit}
        ids = ", ".join(c.id for c in unit[:5]) + (", …" if len(unit) > 5 else "")
        if len(labels) > 1:
            problems.append(
                _problem(
                    "conflicting-labels",
                    unit,
                    f"cases {ids} have the same prompt and both expectTrigger values",
                )
            )
        else:
            problems.append(
                _problem(
                    "duplicate-prompt",
                    unit,
                    f"cases {ids} have the same prompt: they count as one independent case",
                )
            )
    return problems


_NOT_ALNUM = re.compile(r"[\W_]+")


def loose_form(prompt: str) -> str:
    """The prompt compared loosely: casefolded, every non-letter/digit a space, spaces collapsed."""
    folded = unicodedata.normalize("NFKC", prompt).casefold()
    # [\W_] is exactly "not str.isalnum()": one regex pass instead of a Python loop per character.
    return " ".join(_NOT_ALNUM.sub(" ", folded).split())


def _near_duplicates(units: list[list[Case]]) -> list[LintProblem]:
    groups: dict[str, list[Case]] = {}
    for unit in units:
        groups.setdefault(loose_form(unit[0].prompt), []).append(unit[0])
    problems = []
    for firsts in groups.values():
        if len(firsts) > 1:
            ids = ", ".join(c.id for c in firsts[:5]) + (", …" if len(firsts) > 5 else "")
            problems.append(
                _problem(
                    "near-duplicate-prompt",
                    firsts,
                    f"cases {ids} differ only in case, punctuation or spacing: they are hardly "
                    "independent",
                )
            )
    return problems


def names_skill(prompt: str, name: str) -> bool:
    """Whether ``prompt`` holds the skill's name as whole words, both compared loosely (NFKC,
    case, every non-letter/digit a space): ``invoice_audit``, ``Invoice  Audit`` and a
    full-width or non-breaking-hyphen spelling all name ``invoice-audit``."""
    form = loose_form(name)
    return bool(form) and f" {form} " in f" {loose_form(prompt)} "


def _prompt_names_skill(suite: CaseSuite, name: str) -> list[LintProblem]:
    named = [c for c in suite.cases if names_skill(c.prompt, name)]
    if not named:
        return []
    return [
        _problem(
            "prompt-names-skill",
            named,
            f"{len(named)} prompt(s) name the skill {name!r}: the agent is told which skill to "
            "load, so triggering them proves little",
        )
    ]


def _matches_empty(pattern: str, flags: str) -> bool:
    try:
        return re.search(pattern, "", compile_flags(flags)) is not None
    except re.error:
        return False


def _vacuous_reason(case: Case, check: object, timeout_ms: int) -> str | None:
    """Why ``check`` of ``case`` passes whatever the agent does, or None."""
    if isinstance(check, (OutputMatches, FileMatches)) and _matches_empty(
        check.pattern, check.flags
    ):
        return f"{check.name}: the pattern matches the empty text"
    if isinstance(check, IncludesAll) and all(s in case.prompt for s in check.expected):
        return "includes_all: every expected string is in the prompt (an echo passes)"
    if isinstance(check, Command) and check.run[0].rsplit("/", 1)[-1] == "true":
        return "command: the program is 'true', which always succeeds"
    if isinstance(check, Budget):
        limit = _BUDGET_LIMITS.get(check.name)
        if limit is not None and check.value > limit:
            return f"{check.name}: {check.value:g} is above {limit:g}, no run reaches it"
        if check.name == "max_duration_ms" and check.value >= timeout_ms:
            return f"max_duration_ms: {check.value:g} is not below the timeout ({timeout_ms} ms)"
    return None


def _vacuous_checks(suite: CaseSuite, timeout_ms: int) -> list[LintProblem]:
    problems = []
    for case in suite.cases:
        for check in case.task.checks if case.task is not None else ():
            reason = _vacuous_reason(case, check, timeout_ms)
            if reason is not None:
                problems.append(_problem("vacuous-check", [case], f"case {case.id}: {reason}"))
    return problems


def _uplift_problems(
    suite: CaseSuite, min_uplift: float | None
) -> tuple[list[LintProblem], Mde | None]:
    if min_uplift is None:
        return [], None
    units = len({c.unit for c in suite.cases if c.task is not None})
    problems = []
    if units < MIN_TASK_UNITS:
        problems.append(
            _problem(
                "few-task-cases",
                (),
                f"--min-uplift needs at least {MIN_TASK_UNITS} independent cases with a task "
                f"check; this suite has {units} (the run would exit 6)",
            )
        )
    if units == 0:
        return problems, None
    mde = minimum_detectable_uplift(units, min_uplift)
    severity = "warning" if mde.value >= MDE_WARNING else "info"
    problems.append(
        _problem(
            "uplift-mde",
            (),
            f"with {units} task unit(s), --min-uplift {min_uplift:g} passes only for a pass rate "
            f"of at least {mde.value:.2f} ({mde.k} of {units}): the minimum detectable uplift",
            severity,
        )
    )
    return problems, mde


def lint_suite(
    suite: CaseSuite,
    skill_name: str,
    *,
    min_uplift: float | None = None,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> LintResult:
    """The record-free rules on ``suite`` for the skill ``skill_name``."""
    units = _units(suite)
    problems = _label_problems(units)
    problems += _unit_problems(units)
    problems += _near_duplicates(units)
    problems += _prompt_names_skill(suite, skill_name)
    problems += _vacuous_checks(suite, timeout_ms)
    uplift, mde = _uplift_problems(suite, min_uplift)
    return LintResult(tuple(problems + uplift), mde)


def preflight(
    suite: CaseSuite,
    skill_name: str,
    *,
    min_uplift: float | None,
    timeout_ms: int,
    strict: bool,
    notice: Callable[[str], None] | None,
) -> LintResult:
    """The pre-flight of `test` and `ci`: the record-free rules, each warning said once through
    ``notice`` (lint's text form), exit 5 with ``strict`` and a warning, before any runner."""
    result = lint_suite(suite, skill_name, min_uplift=min_uplift, timeout_ms=timeout_ms)
    if notice is not None:
        for problem in result.warnings:
            notice(problem.text(str(suite.path)))
    if strict and result.warnings:
        first = result.warnings[0]
        raise LintFailed(
            f"{suite.path}: lint found {len(result.warnings)} warning(s) and strict is on "
            f"(--strict, or strict: true); the first: {first.rule} ({first.message}); fix the "
            "cases or turn strict off",
            result,
        )
    return result


class LintFailed(InvalidInput):
    """``--strict`` and a lint warning: exit 5 before any runner starts."""

    def __init__(self, message: str, result: LintResult) -> None:
        super().__init__(message)
        self.result = result


def with_lint(report: dict[str, Any], lint: LintResult | None) -> dict[str, Any]:
    """The report with the pre-flight's findings as ``lint`` (when the suite was read)."""
    if lint is not None:
        report["lint"] = [problem.to_json() for problem in lint.problems]
    return report

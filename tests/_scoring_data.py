"""A small hand-computed suite for the scoring tests (evaluate, render).

12 cases, 2 trials, skill ``refund-policy``:

- c01–c08 expect a trigger, c09–c12 do not. c03 misses in trial 2; c09 false-triggers in trial 1.
  → TP 15, FN 1, FP 1, TN 7; precision = recall = F1 = 15/16.
- Units: c10 and c11 share a prompt (after normalisation) → one unit; 11 units in all.
  Task checks on c01–c11 (10 task units); c12 has none.
- Per-unit differences d_u (with − without mean pass), unit order 0..9:
  1, ½, ½, 0, −½, 1, ½, 0, 1, ½ (unit 9 = c10 + c11: with ¾, without ¼)
  → difference 0.45; sign test 7 positive, 1 negative, 2 ties → p = 2·(1+8)/2⁸ = 0.0703125.
  with passes 16/22, without 6/22.
- Loading (only when ``violations=True``): c02 has include [brand-deck], exclude [bugfix-workflow];
  trial 1 without loads nothing (missing brand-deck), trial 2 without loads bugfix-workflow.

Prompts and outputs carry the markers PROMPT_MARK / OUTPUT_MARK so tests can prove they never
reach a report or a rendering.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from skill_evals.checks import Task
from skill_evals.checks.model import ExitCode, IncludesAll, JsonEquals
from skill_evals.report.blocks import Settings
from skill_evals.run.execute import ExecutionResult
from skill_evals.run.observations import Observation, RunnerFailure
from skill_evals.suite.cases import Case, CaseSuite
from skill_evals.suite.skill import Skill

SKILL = "refund-policy"
PROMPT_MARK = "PROMPT-SECRET-7c1f"
OUTPUT_MARK = "OUTPUT-SECRET-9d2e"
STDERR_MARK = "STDERR-SECRET-4a4b"

EXIT_CHECK = Task((ExitCode(0),))
INCLUDES = Task((IncludesAll(("30 days", "receipt")),))
JSON_CHECK = Task((JsonEquals({"refund": True, "days": 30, "items": [1, "a", None]}),))
CHECKS = [EXIT_CHECK, INCLUDES, JSON_CHECK]

# (with passes per trial, without passes per trial) for c01..c11.
PASSES: dict[str, tuple[tuple[bool, bool], tuple[bool, bool]]] = {
    "c01": ((True, True), (False, False)),
    "c02": ((True, True), (True, False)),
    "c03": ((True, False), (False, False)),
    "c04": ((True, True), (True, True)),
    "c05": ((False, False), (True, False)),
    "c06": ((True, True), (False, False)),
    "c07": ((True, True), (False, True)),
    "c08": ((False, False), (False, False)),
    "c09": ((True, True), (False, False)),
    "c10": ((True, True), (False, False)),
    "c11": ((True, False), (True, False)),
}
DIFFERENCES = [1, 0.5, 0.5, 0, -0.5, 1, 0.5, 0, 1, 0.5]


def make_skill(path: Path | None = None, warnings: Sequence[str] = ()) -> Skill:
    return Skill(
        name=SKILL,
        path=path or Path("/work/skills/refund-policy"),
        description="Answer questions about refunds.",
        body="# Refunds\n",
        frontmatter={"name": SKILL, "description": "Answer questions about refunds."},
        skill_md_sha256="a" * 64,
        directory_sha256="b" * 64,
        warnings=tuple(warnings),
    )


def make_suite(*, tasks: bool = True, loaded: bool = False) -> CaseSuite:
    cases = []
    for i in range(1, 13):
        cid = f"c{i:02d}"
        unit = i - 1 if i <= 10 else i - 2  # c10 and c11 share unit 9; c12 is unit 10
        task = CHECKS[i % 3] if tasks and i <= 11 else None
        include: tuple[str, ...] = ("brand-deck",) if loaded and cid == "c02" else ()
        exclude: tuple[str, ...] = ("bugfix-workflow",) if loaded and cid == "c02" else ()
        cases.append(
            Case(
                id=cid,
                prompt=f"{PROMPT_MARK} question {unit}",
                expect_trigger=i <= 8,
                line=i,
                unit=unit,
                task=task,
                include=include,
                exclude=exclude,
                tags=("refunds",) if i % 2 else (),
            )
        )
    return CaseSuite(
        path=Path("evals/cases.jsonl"), sha256="c" * 64, cases=tuple(cases), unit_count=11
    )


def _output(task: Task | None, passed: bool) -> tuple[str, int]:
    """An (output, exitCode) pair that passes or fails ``task``'s one check."""
    if task is None:
        return f"{OUTPUT_MARK} plain answer", 0
    check = task.checks[0]
    if check.name == "exit_code":
        return f"{OUTPUT_MARK} done", 0 if passed else 3
    if check.name == "includes_all":
        text = "Bring the receipt within 30 days." if passed else "Bring the receipt soon."
        return f"{OUTPUT_MARK} {text}", 0
    if passed:  # key order changed, 30.0 == 30: still equal
        return ' \n{"items": [1, "a", null], "days": 30.0, "refund": true}\n', 0
    return f'{{"refund": 1, "days": 30, "items": [1, "a", null], "x": "{OUTPUT_MARK}"}}', 0


def make_observations(suite: CaseSuite, trials: int = 2) -> list[Observation]:
    observations = []
    for case in suite.cases:
        for trial in range(1, trials + 1):
            for variant in ("with", "without"):
                invoked: list[str] = []
                if variant == "with":
                    triggered = case.expect_trigger
                    if case.id == "c03" and trial == 2:
                        triggered = False
                    if case.id == "c09" and trial == 1:
                        triggered = True
                    if triggered:
                        invoked.append(SKILL)
                if case.include:  # c02 with loading rules
                    if not (variant == "without" and trial == 1):
                        invoked.append("brand-deck")
                    if variant == "without" and trial == 2:
                        invoked.append("bugfix-workflow")
                pair = PASSES.get(case.id)
                passed = False
                if pair is not None and trial <= 2:
                    passed = pair[0 if variant == "with" else 1][trial - 1]
                output, exit_code = _output(case.task, passed)
                observations.append(
                    Observation(
                        case_id=case.id,
                        trial=trial,
                        variant=variant,  # type: ignore[arg-type]
                        invoked_skills=tuple(invoked),
                        output=output,
                        exit_code=exit_code,
                        meta={"durationMs": 100, "costUsd": 0.25} if variant == "with" else {},
                    )
                )
    return observations


def make_result(
    suite: CaseSuite | None = None,
    *,
    drop: Sequence[tuple[str, int, str]] = (),
    failures: Sequence[RunnerFailure] = (),
    interrupted: bool = False,
) -> ExecutionResult:
    suite = suite or make_suite()
    observations = [o for o in make_observations(suite) if o.key not in set(drop)]
    return ExecutionResult(
        observations=observations,
        failures=list(failures),
        invocations=len(observations) + len(failures),
        wall_ms=1234.4,
        interrupted=interrupted,
        not_run=len(drop) - len(failures) if len(drop) > len(failures) else 0,
    )


def make_settings(**changes: object) -> Settings:
    base = Settings(mode="runner", trials=2, seed=42, bootstrap_samples=1000)
    return replace(base, **changes)  # type: ignore[arg-type]

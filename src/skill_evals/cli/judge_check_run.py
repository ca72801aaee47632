"""The steps of `skill-evals judge-check`: load the labels, ask the judge, build the report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..codes import INSUFFICIENT
from ..errors import EvalError
from ..plan.judge_plan import named_judges, split_judge
from ..plan.ready import check_helper_key
from ..report.judge_check_report import build_report, error_report
from ..run.judge_check import VerdictCache, check_examples
from ..run.judging import JudgeSettings, Judging
from ..sandbox.probe import requested_mode, sandbox_paths, shared_choice
from ..suite.judge_labels import load_examples

MIN_EXAMPLES = 10


def run_judge_check(
    cases: Path,
    judge: str,
    judges: tuple[str, ...],
    min_agreement: float | None,
    jobs: int,
    judge_timeout_ms: int,
    retries: int,
    max_bytes: int,
    cache: Path | None,
    sandbox: str | None = None,
    sandbox_path: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The judge-check report (its ``exitCode`` is the exit)."""
    try:
        named = named_judges(judges)
        mode = requested_mode(sandbox, os.environ, None)
        choice = shared_choice(mode, sandbox_paths(sandbox_path), os.environ)
        argv = named.get(judge.strip()) or split_judge(judge)
        kind, examples = load_examples(cases)
        if len(examples) < MIN_EXAMPLES:
            return error_report(
                INSUFFICIENT,
                f"{cases}: {len(examples)} labelled example(s); at least {MIN_EXAMPLES} are "
                "needed for an agreement worth reading",
            )
        check_helper_key(argv, "judge", "--judge", os.environ)  # before the first call
        settings = JudgeSettings(
            command=argv, timeout_ms=judge_timeout_ms, max_bytes=max_bytes, retries=retries,
            cwd=Path.cwd(), sandbox=choice,
        )  # fmt: skip
        judging = Judging(settings)
        verdicts = VerdictCache(cache)
        checked = check_examples(examples, judging, verdicts, jobs)
    except EvalError as exc:
        return error_report(exc.exit_code, str(exc))
    report = build_report(kind, examples, checked, judging, min_agreement)
    report["messages"] = list(verdicts.warnings)
    return report

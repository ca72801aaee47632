"""The test report's per-run blocks that restate what was observed (docs/report.md):
``loading``, ``runner`` and ``caseResults``. The verdict and its messages are decided in
test_report.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..plan.settle import Verdict
from ..run.execute import ExecutionResult
from ..run.observations import RunnerFailure
from ..score.figures import Figures
from ..score.scoring import attempted_not_loaded, case_result, load_states, meta_sums
from ..suite.cases import CaseSuite
from .blocks import failure_items


def loading_block(suite: CaseSuite, skill_name: str, figures: Figures) -> dict[str, Any]:
    """The report's ``loading``: violations, attempts that did not load and unverified
    isolation."""
    return {
        "violations": figures.violations,
        "attemptedNotLoaded": attempted_not_loaded(suite, figures.grid, skill_name),
        "isolationUnverified": len(figures.unverified),
        "unverified": figures.unverified,
    }


def runner_block(
    result: ExecutionResult,
    failures: Sequence[RunnerFailure],
    figures: Figures,
    settled: Verdict | None,
) -> dict[str, Any]:
    """The report's ``runner``: invocations, failures, time, meta sums, the ledger and an
    early stop."""
    runner: dict[str, Any] = {
        "invocations": result.invocations,
        "failures": failure_items(failures),
        "wallMs": round(result.wall_ms),
        "meta": meta_sums([*figures.observed, *figures.others]),
        "retried": result.retried,
    }
    if result.ledger is not None:
        runner["ledger"] = result.ledger
        runner["cached"] = result.ledger["cached"]
    stopped = result.stopped
    if stopped is not None:
        runner["stoppedEarly"] = {
            "after": stopped.after,
            "planned": stopped.planned,
            "reason": stopped.reason,
            "settled": settled is not None,
        }
    return runner


def case_results(suite: CaseSuite, skill_name: str, figures: Figures) -> list[dict[str, Any]]:
    """The report's ``caseResults``; per-case evidence states only when some runner reported
    evidence (custom runners need not)."""
    evidence = any(obs.evidence for obs in figures.observed)
    return [
        case_result(case, figures.triggered[case.id], figures.task_results.get(case.id))
        | ({"loadState": load_states(figures.grid, case.id, skill_name)} if evidence else {})
        | (
            {
                "preference": {
                    arm: [pair[0] for pair in row] for arm, row in figures.pairs[case.id].items()
                }
            }
            if case.id in figures.pairs
            else {}
        )
        for case in suite.cases
    ]

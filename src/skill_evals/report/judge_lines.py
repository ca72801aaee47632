"""The one line every renderer prints about a run's judging (docs/judging.md): judge calls,
reuse, failures, swap consistency, and what the judges reported spending."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .comparison import ledger_summary, report_ledger


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def judge_summary(report: Mapping[str, Any]) -> str | None:
    """``judge: 23 calls (0 retried), 0 cached, 0 resumed, 0 failures; tokens in/out 230/46;
    $0.0230`` — None when the run has no judge checks."""
    judge = report.get("judge")
    if not isinstance(judge, Mapping):
        return None
    text = (
        f"judge: {judge.get('calls', 0)} calls ({judge.get('retried', 0)} retried), "
        f"{judge.get('cached', 0)} cached, {judge.get('resumed', 0)} resumed, "
        f"{judge.get('failures', 0)} failures"
    )
    swap = judge.get("swapConsistency")
    if _number(swap):
        text += f"; swap consistency {swap:.3f}"
    runner = report.get("runner")
    ledger = runner.get("ledger") if isinstance(runner, Mapping) else None
    spent = ledger.get("judge") if isinstance(ledger, Mapping) else None
    if isinstance(spent, Mapping):
        tokens = (spent.get("inputTokens"), spent.get("outputTokens"))
        if any(_number(t) for t in tokens):
            text += "; tokens in/out " + "/".join(
                f"{t:,.0f}" if _number(t) else "n/a" for t in tokens
            )
        cost = spent.get("costUsd")
        text += f"; ${cost:.4f}" if _number(cost) else "; cost n/a"
    return text


def pairwise_rows(task: Mapping[str, Any]) -> list[list[str]] | None:
    """The preference table of a pairwise ``task`` (header first), None for an absolute one."""
    counts = task.get("pairwise")
    if task.get("mode") != "pairwise" or not isinstance(counts, Mapping):
        return None
    share = counts.get("preferenceShare")
    return [
        [
            "pairs",
            "with preferred",
            "without preferred",
            "ties",
            "inconsistent",
            "decided by grades",
            "share",
        ],
        [
            str(counts.get("pairs")),
            str(counts.get("withPreferred")),
            str(counts.get("otherPreferred")),
            str(counts.get("ties")),
            str(counts.get("inconsistent")),
            str(counts.get("decidedByGrades", 0)),
            f"{float(share) * 100:.1f}%" if isinstance(share, (int, float)) else "n/a",
        ],
    ]


def run_notes(report: Mapping[str, Any]) -> list[str]:
    """What the run spent (``ledger: …``) and what its judges did, each where there is any,
    as lower-case sentences without a full stop."""
    ledger = ledger_summary(report_ledger(report))
    judged = judge_summary(report)
    return [*([f"ledger: {ledger}"] if ledger else []), *([judged] if judged else [])]
